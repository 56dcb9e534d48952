/*
 * mcu_dsp_depthwise.h - the 3x3 (dilation 1) blocks of the _dsp depthwise kernel (internal
 * header): four channels of one output pixel over the taps in range, and the "simple" output
 * stage of four channels.
 *
 * group_RxC (R = 3 or 2 kernel rows, C = 3 or 2 kernel columns in range): `x` = the input of
 * the first tap in range (channel 4g), `w` = its weight word in the group's nine (tap (i, j)
 * at byte 12 i + 4 j, so a block that starts at row i0, column j0 reads w + 12 i0 + 4 j0);
 * the input offset is not added (the caller's bias carries input_offset * the sum of the
 * weights of the taps in range):
 *
 *   acc[r] += sum_{i < R, j < C} W[r, i, j] * X[x + i * row_step + j * column_step + r]
 *
 * 10 instructions per tap (LDR, LDR, 4 SXTB16, SMLABB / SMLATT x 4). A border pixel or a
 * border row thus runs only its taps in range, without per-tap bound checks.
 *
 * store_simple: the simple output stage (mcu_dsp_internal.h, every channel not wide, right
 * shift 1..22, the output offset folded into the rounding term), in asm with the parameters
 * read as pairs (LDRD): 41 instructions for four channels, one word store.
 */
#ifndef MCU_DSP_DEPTHWISE_H
#define MCU_DSP_DEPTHWISE_H

#include "mcu_dsp_internal.h"

/* The simple stage of a group of four channels (the layout the asm store reads). */
typedef struct {
    int32_t multiplier[4], round[4], right[4];   /* round = 2^(right-1) + output_offset * 2^right */
    int32_t low_bytes, high_bytes;               /* the activation bounds, four bytes each */
} simple_stage;

#if MCU_DSP_NATIVE
/* (a.lo + b.lo, a.hi + b.hi), each half mod 2^16 (SADD16). */
static inline int32_t mcu_dw_sadd16(int32_t a, int32_t b) {
    return __sadd16(a, b);
}

#define MCU_DW_TAP(load_x, weight_offset)                  \
    "ldr %[in], " load_x "\n\t"                            \
    "ldr %[wt], [%[w], #" weight_offset "]\n\t"           \
    "sxtb16 %[x02], %[in]\n\t"                             \
    "sxtb16 %[in], %[in], ror #8\n\t"                      \
    "sxtb16 %[w02], %[wt]\n\t"                             \
    "sxtb16 %[wt], %[wt], ror #8\n\t"                      \
    "smlabb %[a0], %[x02], %[w02], %[a0]\n\t"              \
    "smlatt %[a2], %[x02], %[w02], %[a2]\n\t"              \
    "smlabb %[a1], %[in], %[wt], %[a1]\n\t"                \
    "smlatt %[a3], %[in], %[wt], %[a3]\n\t"
#define MCU_DW_ROW3(w0, w1, w2) \
    MCU_DW_TAP("[%[x]]", w0) MCU_DW_TAP("[%[x], %[cs]]", w1) MCU_DW_TAP("[%[x], %[cs], lsl #1]", w2)
#define MCU_DW_ROW2(w0, w1) MCU_DW_TAP("[%[x]]", w0) MCU_DW_TAP("[%[x], %[cs]]", w1)
#define MCU_DW_NEXT "add %[x], %[x], %[rs]\n\t"

#define MCU_DW_BLOCK(name, body)                                                                          \
    MCU_DSP_INLINE void name(const int8_t *x, int32_t column_step, int32_t row_step, const int8_t *w,      \
                             int32_t acc[4]) {                                                             \
        int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], in, wt, x02, w02;                      \
        __asm__(body                                                                                       \
                : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [in] "=&r"(in), \
                  [wt] "=&r"(wt), [x02] "=&r"(x02), [w02] "=&r"(w02)                                       \
                : [cs] "r"(column_step), [rs] "r"(row_step), [w] "r"(w)                                    \
                : "memory");                                                                               \
        acc[0] = a0;                                                                                       \
        acc[1] = a1;                                                                                       \
        acc[2] = a2;                                                                                       \
        acc[3] = a3;                                                                                       \
    }

MCU_DW_BLOCK(group_3x3, MCU_DW_ROW3("0", "4", "8") MCU_DW_NEXT MCU_DW_ROW3("12", "16", "20") MCU_DW_NEXT
                        MCU_DW_ROW3("24", "28", "32"))
MCU_DW_BLOCK(group_3x2, MCU_DW_ROW2("0", "4") MCU_DW_NEXT MCU_DW_ROW2("12", "16") MCU_DW_NEXT MCU_DW_ROW2("24", "28"))
MCU_DW_BLOCK(group_2x3, MCU_DW_ROW3("0", "4", "8") MCU_DW_NEXT MCU_DW_ROW3("12", "16", "20"))
MCU_DW_BLOCK(group_2x2, MCU_DW_ROW2("0", "4") MCU_DW_NEXT MCU_DW_ROW2("12", "16"))

/* Two channels (a, b) of the stage: requantized (SMMULR of 2 acc, round, the floor shift)
 * and saturated to int8; `index` = the byte offset of channel a's multiplier. */
#define MCU_DW_PAIR(a, b, index)                                 \
    "ldrd %[m0], %[m1], [%[p], #" index "]\n\t"                  \
    "lsl %[" a "], %[" a "], #1\n\t"                             \
    "lsl %[" b "], %[" b "], #1\n\t"                             \
    "smmulr %[" a "], %[" a "], %[m0]\n\t"                       \
    "smmulr %[" b "], %[" b "], %[m1]\n\t"                       \
    "ldrd %[m0], %[m1], [%[p], #16 + " index "]\n\t"             \
    "add %[m0], %[m0], %[" a "], asr #31\n\t"                    \
    "add %[m1], %[m1], %[" b "], asr #31\n\t"                    \
    "add %[" a "], %[" a "], %[m0]\n\t"                          \
    "add %[" b "], %[" b "], %[m1]\n\t"                          \
    "ldrd %[m0], %[m1], [%[p], #32 + " index "]\n\t"             \
    "asr %[" a "], %[" a "], %[m0]\n\t"                          \
    "asr %[" b "], %[" b "], %[m1]\n\t"                          \
    "ssat %[" a "], #8, %[" a "]\n\t"                            \
    "ssat %[" b "], #8, %[" b "]\n\t"

/* out[0..3] of a simple group: the four bytes packed (PKHBT, UXTB16) and clamped bytewise
 * (SSUB8 + SEL: clamp(ssat8(v), low, high) = clamp(v, low, high)), one word store. */
MCU_DSP_INLINE void store_simple(const simple_stage *stage, const int32_t acc[4], int8_t *out) {
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], m0, m1;
    __asm__ volatile(MCU_DW_PAIR("a0", "a1", "0") MCU_DW_PAIR("a2", "a3", "8")
            "pkhbt %[a0], %[a0], %[a2], lsl #16\n\t"
            "pkhbt %[a1], %[a1], %[a3], lsl #16\n\t"
            "uxtb16 %[a0], %[a0]\n\t"
            "uxtb16 %[a1], %[a1]\n\t"
            "orr %[a0], %[a0], %[a1], lsl #8\n\t"
            "ldrd %[m0], %[m1], [%[p], #48]\n\t"
            "ssub8 %[a1], %[a0], %[m0]\n\t"
            "sel %[a0], %[a0], %[m0]\n\t"
            "ssub8 %[a1], %[a0], %[m1]\n\t"
            "sel %[a0], %[m1], %[a0]\n\t"
            "str %[a0], [%[out]]\n\t"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [m0] "=&r"(m0), [m1] "=&r"(m1)
            : [p] "r"(stage), [out] "r"(out)
            : "cc", "memory");
}
#else
static inline int32_t mcu_dw_sadd16(int32_t a, int32_t b) {
    uint32_t low = ((uint32_t)a + (uint32_t)b) & 0xFFFFu, high = (((uint32_t)a >> 16) + ((uint32_t)b >> 16)) & 0xFFFFu;
    return (int32_t)(high << 16 | low);
}

/* Portable: R rows x C columns of taps, any R, C (the same sums as the asm blocks). */
MCU_DSP_INLINE void group_block(const int8_t *x, int32_t column_step, int32_t row_step, const int8_t *w,
                                int32_t rows, int32_t columns, int32_t acc[4]) {
    for (int32_t i = 0; i < rows; ++i) {
        for (int32_t j = 0; j < columns; ++j) {
            int32_t in = mcu_read32(x + i * row_step + j * column_step), weights = mcu_read32(w + 12 * i + 4 * j);
            int32_t x02 = mcu_sxtb16(in), x13 = mcu_sxtb16_ror8(in);
            acc[0] = mcu_smlabb(x02, mcu_sxtb16(weights), acc[0]);
            acc[2] = mcu_smlatt(x02, mcu_sxtb16(weights), acc[2]);
            acc[1] = mcu_smlabb(x13, mcu_sxtb16_ror8(weights), acc[1]);
            acc[3] = mcu_smlatt(x13, mcu_sxtb16_ror8(weights), acc[3]);
        }
    }
}

#define MCU_DW_BLOCK(name, rows, columns)                                                                  \
    MCU_DSP_INLINE void name(const int8_t *x, int32_t column_step, int32_t row_step, const int8_t *w,      \
                             int32_t acc[4]) {                                                             \
        group_block(x, column_step, row_step, w, rows, columns, acc);                                      \
    }
MCU_DW_BLOCK(group_3x3, 3, 3)
MCU_DW_BLOCK(group_3x2, 3, 2)
MCU_DW_BLOCK(group_2x3, 2, 3)
MCU_DW_BLOCK(group_2x2, 2, 2)

/* floor((smmulr(2 acc, m) + round - [negative]) / 2^right): mbqm + the output offset. */
MCU_DSP_INLINE int32_t simple_value(int32_t acc, int32_t multiplier, int32_t round, int32_t right) {
    int32_t value = mcu_smmulr((int32_t)((uint32_t)acc << 1), multiplier);
    return (value + round + (value >> 31)) >> right;
}

MCU_DSP_INLINE void store_simple(const simple_stage *stage, const int32_t acc[4], int8_t *out) {
    int32_t v0 = mcu_ssat8(simple_value(acc[0], stage->multiplier[0], stage->round[0], stage->right[0]));
    int32_t v1 = mcu_ssat8(simple_value(acc[1], stage->multiplier[1], stage->round[1], stage->right[1]));
    int32_t v2 = mcu_ssat8(simple_value(acc[2], stage->multiplier[2], stage->round[2], stage->right[2]));
    int32_t v3 = mcu_ssat8(simple_value(acc[3], stage->multiplier[3], stage->round[3], stage->right[3]));
    int32_t word = mcu_uxtb16(mcu_pkhbt(v0, v2)) | (int32_t)((uint32_t)mcu_uxtb16(mcu_pkhbt(v1, v3)) << 8);
    mcu_write32(out, mcu_min8(mcu_max8(word, stage->low_bytes), stage->high_bytes));
}
#endif

#endif /* MCU_DSP_DEPTHWISE_H */
