/*
 * gemm_quad_dsp.c - the "quad" and "triple" output stages of the _dsp conv (mcu_dsp_gemm.h):
 * four (three) q15 columns, i.e. output pixels, times one plain weight row at a time,
 * requantized and stored.
 *
 * Columns: B = 4 (3) interleaved by group, column c's group g at halfword 4Bg + 4c, each
 * group stored (x0, x2, x1, x3). Weights: plain rows of Kp bytes (natural order). Quad, per
 * two groups (eight k of four pixels, 32 MACs): 1 LDRD of weights, 4 SXTB16, 4 LDM of four
 * column words, 16 SMLAD = 25 instructions; with the loop, 51 per 64 MACs (0.8 per MAC).
 * Triple, per group (12 MACs): 1 LDR, 2 SXTB16, 1 LDM of six column words, 6 SMLAD; with the
 * loop 42 per 48 MACs (0.875; the triple takes 6*Kp scratch bytes where 8*Kp do not fit):
 *
 *   acc[p] = bias[o] + sum_k W[o, k] * (X_p[k] + input_offset)    p < B (mod 2^32, exact)
 *
 * The requantization rounds with SMMLAR, and takes the sign of the rounding correction from
 * acc instead of from v = smmulr(2 acc, m) (m >= 0: v < 0 only when acc < 0, and when v = 0
 * the -1 of a negative acc cannot reach the next multiple of 2^right, right >= 1):
 *
 *   out = ssat8((smmlar(2 acc, m, 2^(right-1) + offset * 2^right) + (acc >> 31)) >> right)
 *
 * ("saturating"; "simple" adds the offset after the shift and clamps; "general" is the
 * 2x2 stage's own per-channel form). Stores go to out[3], out[2], out[1], out[0] in that
 * order, so that a block of fewer than four pixels passes out[0] for the missing ones: the
 * last store of each channel is pixel 0's own value.
 */
#include "mcu_dsp_gemm.h"

#if MCU_DSP_NATIVE
/* One group: 1 LDR, 2 SXTB16, 2 LDM, 8 SMLAD. Registers: r0 columns, r1 weights,
 * r2 count, r3 / r12 weight words, lr the (w0, w2) half, r4-r7 acc, r8-r11 column words. */
#define QUAD_GROUP(word)                          \
    "sxtb16 lr, " word "\n\t"                     \
    "sxtb16 " word ", " word ", ror #8\n\t"       \
    "ldm r0!, {r8-r11}\n\t"                       \
    "smlad r4, r8, lr, r4\n\t"                    \
    "smlad r4, r9, " word ", r4\n\t"              \
    "smlad r5, r10, lr, r5\n\t"                   \
    "smlad r5, r11, " word ", r5\n\t"             \
    "ldm r0!, {r8-r11}\n\t"                       \
    "smlad r6, r8, lr, r6\n\t"                    \
    "smlad r6, r9, " word ", r6\n\t"              \
    "smlad r7, r10, lr, r7\n\t"                   \
    "smlad r7, r11, " word ", r7\n\t"

#define QUAD_PAIR "ldrd r3, r12, [r1], #8\n\t" QUAD_GROUP("r3") QUAD_GROUP("r12")

/* r4-r7 += the four columns at r0 . the row at r1 (both advanced), r2 = groups >= 1. */
#define QUAD_DOT                                                                       \
    "lsrs r2, r2, #1\n\t"                                                               \
    "bcc 1f\n\t"                                                                        \
    "ldr r3, [r1], #4\n\t" QUAD_GROUP("r3")                                             \
    "1:\n\t"                                                                            \
    "lsrs r2, r2, #1\n\t"   /* C: an odd pair; Z: no loop (nothing below sets flags) */ \
    "bcc 2f\n\t" QUAD_PAIR                                                              \
    "2:\n\t"                                                                            \
    "beq 4f\n\t"                                                                        \
    "3:\n\t" QUAD_PAIR QUAD_PAIR                                                        \
    "subs r2, r2, #1\n\t"                                                               \
    "bne 3b\n\t"                                                                        \
    "4:\n\t"

/* acc[0..3] += column p . row, groups >= 1 (AAPCS: x r0, w r1, groups r2, acc r3). Naked:
 * all fourteen registers are the loop's; noipa: callers assume the whole AAPCS clobber set. */
#define QUAD_REGISTER __attribute__((unused))   /* read by the asm through r0-r3 */
__attribute__((naked, noipa)) static void dot_4x1(QUAD_REGISTER const int16_t *x, QUAD_REGISTER const int8_t *w,
                                                   QUAD_REGISTER int32_t groups, QUAD_REGISTER int32_t acc[4]) {
    __asm__ volatile(
        "push {r3-r11, lr}\n\t"
        "ldm r3, {r4-r7}\n\t"
        QUAD_DOT
        "ldr r3, [sp]\n\t"
        "stm r3, {r4-r7}\n\t"
        "pop {r3-r11, pc}\n\t");
}

/* One triple group: 1 LDR, 2 SXTB16, 1 LDM, 6 SMLAD. Registers: r0 columns, r1 weights,
 * r2 count, r3 the weight word, lr its (w0, w2) half, r4-r6 acc, r7-r12 column words. */
#define TRIPLE_GROUP                              \
    "ldr r3, [r1], #4\n\t"                       \
    "sxtb16 lr, r3\n\t"                          \
    "sxtb16 r3, r3, ror #8\n\t"                  \
    "ldm r0!, {r7-r12}\n\t"                      \
    "smlad r4, r7, lr, r4\n\t"                   \
    "smlad r4, r8, r3, r4\n\t"                   \
    "smlad r5, r9, lr, r5\n\t"                   \
    "smlad r5, r10, r3, r5\n\t"                  \
    "smlad r6, r11, lr, r6\n\t"                  \
    "smlad r6, r12, r3, r6\n\t"

/* acc[0..2] += column p . row, groups >= 1; as dot_4x1. */
__attribute__((naked, noipa)) static void dot_3x1(QUAD_REGISTER const int16_t *x, QUAD_REGISTER const int8_t *w,
                                                   QUAD_REGISTER int32_t groups, QUAD_REGISTER int32_t acc[3]) {
    __asm__ volatile(
        "push {r3-r11, lr}\n\t"
        "ldm r3, {r4-r6}\n\t"
        "lsrs r2, r2, #1\n\t"
        "bcc 1f\n\t"
        TRIPLE_GROUP
        "1:\n\t"
        "lsrs r2, r2, #1\n\t"
        "bcc 2f\n\t"
        TRIPLE_GROUP
        TRIPLE_GROUP
        "2:\n\t"
        "beq 4f\n\t"
        "3:\n\t"
        TRIPLE_GROUP
        TRIPLE_GROUP
        TRIPLE_GROUP
        TRIPLE_GROUP
        "subs r2, r2, #1\n\t"
        "bne 3b\n\t"
        "4:\n\t"
        "ldr r3, [sp]\n\t"
        "stm r3, {r4-r6}\n\t"
        "pop {r3-r11, pc}\n\t");
}

/* The quad's whole channel loop in asm, for bias != NULL and every channel simple with a
 * shift of -1..-22 (the offset folded into the rounding term, as the saturating stage of
 * mcu_dsp_gemm.h). The job (quad_job, word offsets in the comments) is advanced in place. */
typedef struct {
    const int16_t *columns;       /* 0 */
    int32_t groups;               /* 4 */
    const int32_t *bias;          /* 8, advanced */
    const int32_t *multiplier;    /* 12, advanced */
    const int32_t *shift;         /* 16, advanced */
    int32_t offset;               /* 20 */
    const int8_t *w_end;          /* 24: the end of the last row */
    int32_t low4, high4;          /* 28, 32: the activation bounds, four bytes each */
    int8_t *out[4];               /* 36..48, advanced */
    const int8_t *w;              /* 52 */
} quad_job;

/* Channel start: acc = bias, the dot product, the channel's scale (r8 multiplier, r9 right,
 * r10 round = 2^(right-1) + offset * 2^right) and the four rounded, saturated outputs. */
#define QUAD_ROUND(acc)                           \
    "lsl r3, " acc ", #1\n\t"                     \
    "smmlar r3, r3, r8, r10\n\t"                  \
    "add r3, r3, " acc ", asr #31\n\t"            \
    "asr r3, r3, r9\n\t"                          \
    "ssat " acc ", #8, r3\n\t"

#define QUAD_CHANNEL                              \
    "5:\n\t"                                      \
    "ldr r12, [sp]\n\t"                           \
    "ldr r3, [r12, #8]\n\t"                       \
    "ldr r4, [r3], #4\n\t"                        \
    "str r3, [r12, #8]\n\t"                       \
    "mov r5, r4\n\t"                              \
    "mov r6, r4\n\t"                              \
    "mov r7, r4\n\t"                              \
    "ldrd r0, r2, [r12]\n\t"                      \
    QUAD_DOT                                      \
    "ldr r12, [sp]\n\t"                           \
    "ldr r3, [r12, #12]\n\t"                      \
    "ldr r8, [r3], #4\n\t"                        \
    "str r3, [r12, #12]\n\t"                      \
    "ldr r3, [r12, #16]\n\t"                      \
    "ldr r9, [r3], #4\n\t"                        \
    "str r3, [r12, #16]\n\t"                      \
    "rsb r9, r9, #0\n\t"                          \
    "ldr r10, [r12, #20]\n\t"                     \
    "lsl r10, r10, r9\n\t"                        \
    "mov r11, #1\n\t"                             \
    "lsl r11, r11, r9\n\t"                        \
    "add r10, r10, r11, lsr #1\n\t"               \
    QUAD_ROUND("r4") QUAD_ROUND("r5") QUAD_ROUND("r6") QUAD_ROUND("r7")

/* Channel end: the next channel while r1 has not reached w_end (r12 = job + 36). */
#define QUAD_NEXT                                 \
    "stm r12, {r8-r11}\n\t"                       \
    "ldr r3, [r12, #-12]\n\t"                     \
    "cmp r1, r3\n\t"                              \
    "bne 5b\n\t"

/* No activation clamp: the four bytes stored as they are (pixels 3, 2, 1, 0). */
__attribute__((naked, noipa)) static void quad_channels_saturating(QUAD_REGISTER quad_job *job) {
    __asm__ volatile(
        "push {r0, r4-r11, lr}\n\t"
        "ldr r1, [r0, #52]\n\t"
        QUAD_CHANNEL
        "add r12, r12, #36\n\t"
        "ldm r12, {r8-r11}\n\t"
        "strb r7, [r11], #1\n\t"
        "strb r6, [r10], #1\n\t"
        "strb r5, [r9], #1\n\t"
        "strb r4, [r8], #1\n\t"
        QUAD_NEXT
        "pop {r0, r4-r11, pc}\n\t");
}

/* An activation clamp: the four bytes packed, clamped bytewise (SSUB8 + SEL: max with low,
 * min with high), then stored. */
__attribute__((naked, noipa)) static void quad_channels_clamped(QUAD_REGISTER quad_job *job) {
    __asm__ volatile(
        "push {r0, r4-r11, lr}\n\t"
        "ldr r1, [r0, #52]\n\t"
        QUAD_CHANNEL
        "bfi r4, r5, #8, #8\n\t"
        "bfi r4, r6, #16, #8\n\t"
        "bfi r4, r7, #24, #8\n\t"
        "ldrd r2, r3, [r12, #28]\n\t"
        "ssub8 r0, r4, r2\n\t"
        "sel r4, r4, r2\n\t"
        "ssub8 r0, r4, r3\n\t"
        "sel r4, r3, r4\n\t"
        "add r12, r12, #36\n\t"
        "ldm r12, {r8-r11}\n\t"
        "lsr r5, r4, #24\n\t"
        "strb r5, [r11], #1\n\t"
        "lsr r5, r4, #16\n\t"
        "strb r5, [r10], #1\n\t"
        "lsr r5, r4, #8\n\t"
        "strb r5, [r9], #1\n\t"
        "strb r4, [r8], #1\n\t"
        QUAD_NEXT
        "pop {r0, r4-r11, pc}\n\t");
}

/* The job of one block (channels >= 1). */
static void quad_job_run(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *const out[4], int32_t clamped) {
    uint32_t low = (uint8_t)(int8_t)output->activation.min, high = (uint8_t)(int8_t)output->activation.max;
    quad_job job = {columns, row / 4, output->bias, output->multiplier, output->shift, output->output_offset,
                    w + channels * row, (int32_t)(low * 0x01010101u), (int32_t)(high * 0x01010101u),
                    {out[0], out[1], out[2], out[3]}, w};
    if (clamped) {
        quad_channels_clamped(&job);
    } else {
        quad_channels_saturating(&job);
    }
}
#else
/* acc[p] += column p . row for p < pixels (columns 4 * pixels halfwords per group). */
static void dot_columns(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[4], int32_t pixels) {
    for (; groups > 0; --groups, x += 4 * pixels, w += 4) {
        int32_t word = mcu_read32(w);
        int32_t w02 = mcu_sxtb16(word), w13 = mcu_sxtb16_ror8(word);
        for (int32_t p = 0; p < pixels; ++p) {
            acc[p] = mcu_smlad(mcu_read32(x + 4 * p + 2), w13, mcu_smlad(mcu_read32(x + 4 * p), w02, acc[p]));
        }
    }
}

static void dot_4x1(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[4]) {
    dot_columns(x, w, groups, acc, 4);
}

static void dot_3x1(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[4]) {
    dot_columns(x, w, groups, acc, 3);
}
#endif

enum { QUAD_SATURATING, QUAD_SIMPLE, QUAD_GENERAL };

/* (smmlar(2 acc, m, round) + [acc < 0]) >> right: the module docstring's rounding. */
MCU_DSP_INLINE int32_t quad_round(int32_t acc, int32_t multiplier, int32_t round, int32_t right) {
    int32_t value = mcu_smmlar((int32_t)((uint32_t)acc << 1), multiplier, round);
    return (value + (acc >> 31)) >> right;
}

/* One output of the saturating / simple stages (`mode` a constant after inlining). */
MCU_DSP_INLINE int8_t quad_output(const mcu_dsp_gemm_output *output, int32_t acc, int32_t multiplier, int32_t round,
                                  int32_t right, int32_t mode) {
    int32_t value = quad_round(acc, multiplier, round, right);
    if (mode == QUAD_SATURATING) {
        return (int8_t)mcu_ssat8(value);
    }
    return (int8_t)mcu_clamp(value + output->output_offset, output->activation.min, output->activation.max);
}

/* Pixels 3, 2, 1, 0 of channel o in the general stage (the 2x2 stage's per-channel form). */
static void quad_general(const mcu_dsp_gemm_output *output, const int32_t acc[4], int32_t o, int8_t *const out[4]) {
    mcu_dsp_scale scale = mcu_dsp_scale_of(output->multiplier[o], output->shift[o], mcu_dsp_bias_of(output, o),
                                           output->reach);
    for (int32_t p = 3; p >= 0; --p) {   /* a triple's acc[3] is the bias: out[3] = out[0] */
        out[p][o] = mcu_dsp_output_any(acc[p], &scale, output->output_offset, output->activation.min,
                                       output->activation.max);
    }
}

MCU_DSP_INLINE void quad(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *const out[4], int32_t mode, int32_t pixels) {
    int32_t groups = row / 4;
    int8_t *out0 = out[0], *out1 = out[1], *out2 = out[2], *out3 = out[3];
    for (int32_t o = 0; o < channels; ++o, w += row) {
        int32_t start = mcu_dsp_bias_of(output, o);
        int32_t acc[4] = {start, start, start, start};
        if (pixels == 4) {
            dot_4x1(columns, w, groups, acc);
        } else {
            dot_3x1(columns, w, groups, acc);
        }
        if (mode == QUAD_GENERAL) {
            quad_general(output, acc, o, out);
            continue;
        }
        int32_t multiplier = output->multiplier[o], right = -output->shift[o];
        int32_t round = (int32_t)((uint32_t)1 << (right - 1));
        if (mode == QUAD_SATURATING) {
            round += (int32_t)((uint32_t)output->output_offset << right);
        }
        int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
        if (pixels == 4) {
            out3[o] = quad_output(output, a3, multiplier, round, right, mode);
        }
        out2[o] = quad_output(output, a2, multiplier, round, right, mode);
        out1[o] = quad_output(output, a1, multiplier, round, right, mode);
        out0[o] = quad_output(output, a0, multiplier, round, right, mode);
    }
}

void mcu_dsp_quad_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                             int32_t row, int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_SATURATING, 4);
}

void mcu_dsp_quad_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_SIMPLE, 4);
}

void mcu_dsp_quad_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                          int32_t row, int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_GENERAL, 4);
}

void mcu_dsp_triple_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                               int32_t row, int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_SATURATING, 3);
}

void mcu_dsp_triple_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                           int32_t row, int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_SIMPLE, 3);
}

void mcu_dsp_triple_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                            int32_t row, int32_t channels, int8_t *const out[4]) {
    quad(output, columns, w, row, channels, out, QUAD_GENERAL, 3);
}

/* The asm channel loops (mcu_dsp_gemm.h: mcu_dsp_quad_fast_for); portable builds: the C ones. */
void mcu_dsp_quad_saturating_fast(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                                  int32_t row, int32_t channels, int8_t *const out[4]) {
#if MCU_DSP_NATIVE
    if (channels > 0) {
        quad_job_run(output, columns, w, row, channels, out, 0);
    }
#else
    quad(output, columns, w, row, channels, out, QUAD_SATURATING, 4);
#endif
}

void mcu_dsp_quad_clamped_fast(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                               int32_t row, int32_t channels, int8_t *const out[4]) {
#if MCU_DSP_NATIVE
    if (channels > 0) {
        quad_job_run(output, columns, w, row, channels, out, 1);
    }
#else
    quad(output, columns, w, row, channels, out, QUAD_SIMPLE, 4);
#endif
}
