/*
 * gemm_mve.c - the dot products and output stage of the _mve conv and fully connected
 * kernels (mcu_mve_gemm.h): blocks of 2 columns x 4 quad rows (8 VMLADAVA per 16 k), 1 x 4
 * for a single column, and the remainder block of 1..3 rows; then the vector requantization
 * of four channels at a time (mcu_mve_internal.h), the channels' scales loaded once per
 * block and shared by both columns (store_quad: one output stage for both columns and every
 * path).
 *
 * mcu_mve_gemm reads the scales from three arrays (fully connected, pointwise conv);
 * mcu_mve_gemm_packed from one packed block per four channels (the im2col conv), and runs a
 * pair of columns with shifts <= -1 through a naked-asm loop over every whole block (no
 * spills: the eight sums in r0..r12 / lr, the scales by post-increment loads), per block of
 * Kp = 16 * n bytes  2 + 14 + 15 * (n - 1) (+2 for even n) dot instructions, 4 VMOV,
 * 15 for the output stage (19 with the rounding fix-up) and 7 of bookkeeping.
 */
#include "mcu_mve_gemm.h"

#if defined(__GNUC__)
#define MCU_MVE_INLINE static inline __attribute__((always_inline))
#else
#define MCU_MVE_INLINE static inline
#endif


#if MCU_MVE_NATIVE
/* Hand-scheduled (GCC 12 spills one of the eight accumulators: VMLADAVA needs even
 * registers, all eight of r0..r12 and lr): the first chunk VMLADAV, then 16 instructions
 * per 128 MACs; the sums come back as two vectors (channels o..o+3 of each column). */
static inline void dot_2x4(const int8_t *x0, const int8_t *x1, const int8_t *w, int32_t chunks, mcu_s32x4 *first,
                           mcu_s32x4 *second) {
    int32_t a0, a1, a2, a3, b0, b1, b2, b3;
    mcu_s32x4 p, q;
#define MCU_MVE_STEP(op) \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a0], q0, q2\n\t" op " %[b0], q1, q2\n\t" \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a1], q0, q2\n\t" op " %[b1], q1, q2\n\t" \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a2], q0, q2\n\t" op " %[b2], q1, q2\n\t" \
    "vldrb.8 q2, [%[w]], #16\n\t" op " %[a3], q0, q2\n\t" op " %[b3], q1, q2\n\t"
    __asm__ volatile(
        "vldrb.8 q0, [%[x0]], #16\n\t"
        "vldrb.8 q1, [%[x1]], #16\n\t"
        MCU_MVE_STEP("vmladav.s8")
        "subs %[chunks], %[chunks], #1\n\t"
        "beq 2f\n"
        "1:\n\t"
        "vldrb.8 q0, [%[x0]], #16\n\t"
        "vldrb.8 q1, [%[x1]], #16\n\t"
        MCU_MVE_STEP("vmladava.s8")
        "subs %[chunks], %[chunks], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "vmov %q[p][2], %q[p][0], %[a0], %[a2]\n\t"
        "vmov %q[p][3], %q[p][1], %[a1], %[a3]\n\t"
        "vmov %q[q][2], %q[q][0], %[b0], %[b2]\n\t"
        "vmov %q[q][3], %q[q][1], %[b1], %[b3]\n\t"
        : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [b0] "=&Te"(b0), [b1] "=&Te"(b1),
          [b2] "=&Te"(b2), [b3] "=&Te"(b3), [x0] "+r"(x0), [x1] "+r"(x1), [w] "+r"(w), [chunks] "+r"(chunks),
          [p] "=&w"(p), [q] "=&w"(q)
        :
        : "q0", "q1", "q2", "cc", "memory");
#undef MCU_MVE_STEP
    *first = p;
    *second = q;
}

static inline mcu_s32x4 dot_1x4(const int8_t *x0, const int8_t *w, int32_t chunks) {
    int32_t a0, a1, a2, a3;
    mcu_s32x4 p;
    __asm__ volatile(
        "vldrb.8 q0, [%[x0]], #16\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladav.s8 %[a0], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladav.s8 %[a1], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladav.s8 %[a2], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladav.s8 %[a3], q0, q2\n\t"
        "subs %[chunks], %[chunks], #1\n\t"
        "beq 2f\n"
        "1:\n\t"
        "vldrb.8 q0, [%[x0]], #16\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladava.s8 %[a0], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladava.s8 %[a1], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladava.s8 %[a2], q0, q2\n\t"
        "vldrb.8 q2, [%[w]], #16\n\t"
        "vmladava.s8 %[a3], q0, q2\n\t"
        "subs %[chunks], %[chunks], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "vmov %q[p][2], %q[p][0], %[a0], %[a2]\n\t"
        "vmov %q[p][3], %q[p][1], %[a1], %[a3]\n\t"
        : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [x0] "+r"(x0), [w] "+r"(w),
          [chunks] "+r"(chunks), [p] "=&w"(p)
        :
        : "q0", "q2", "cc", "memory");
    return p;
}
#else
static void dot_2x4(const int8_t *x0, const int8_t *x1, const int8_t *w, int32_t chunks, mcu_s32x4 *first,
                    mcu_s32x4 *second) {
    int32_t a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
    for (; chunks > 0; --chunks, x0 += 16, x1 += 16, w += 64) {
        mcu_s8x16 p = mcu_vld_s8(x0), q = mcu_vld_s8(x1);
        for (int32_t r = 0; r < 4; ++r) {
            a[r] = mcu_vmladava_s8(a[r], p, mcu_vld_s8(w + 16 * r));
            b[r] = mcu_vmladava_s8(b[r], q, mcu_vld_s8(w + 16 * r));
        }
    }
    *first = mcu_vset4_s32(a[0], a[1], a[2], a[3]);
    *second = mcu_vset4_s32(b[0], b[1], b[2], b[3]);
}

static mcu_s32x4 dot_1x4(const int8_t *x0, const int8_t *w, int32_t chunks) {
    int32_t a[4] = {0, 0, 0, 0};
    for (; chunks > 0; --chunks, x0 += 16, w += 64) {
        mcu_s8x16 p = mcu_vld_s8(x0);
        for (int32_t r = 0; r < 4; ++r) {
            a[r] = mcu_vmladava_s8(a[r], p, mcu_vld_s8(w + 16 * r));
        }
    }
    return mcu_vset4_s32(a[0], a[1], a[2], a[3]);
}
#endif

/* The last block of `rows` < 4 rows (interleaved 16 bytes at a time among themselves), one
 * column: per 16 k one column load, `rows` weight loads and VMLADAVA, 2 of loop (a C loop over
 * the rows spills the sums to the stack). Lanes past `rows`: 0. */
#if MCU_MVE_NATIVE
#define MCU_MVE_TAIL_LOOP(steps, ...)                                                           \
    __asm__ volatile("1:\n\t" "vldrb.8 q0, [%[x]], #16\n\t" steps "subs %[n], %[n], #1\n\t" "bne 1b\n" \
                     : __VA_ARGS__, [x] "+r"(x), [w] "+r"(w), [n] "+r"(chunks) : : "q0", "q2", "cc", "memory")
#define MCU_MVE_TAIL_STEP(sum) "vldrb.8 q2, [%[w]], #16\n\t" "vmladava.s8 %[" sum "], q0, q2\n\t"
static inline mcu_s32x4 dot_rows(const int8_t *x, const int8_t *w, int32_t chunks, int32_t rows) {
    int32_t a0 = 0, a1 = 0, a2 = 0;
    if (rows == 1) {
        MCU_MVE_TAIL_LOOP(MCU_MVE_TAIL_STEP("a0"), [a0] "+Te"(a0));
    } else if (rows == 2) {
        MCU_MVE_TAIL_LOOP(MCU_MVE_TAIL_STEP("a0") MCU_MVE_TAIL_STEP("a1"), [a0] "+Te"(a0), [a1] "+Te"(a1));
    } else {
        MCU_MVE_TAIL_LOOP(MCU_MVE_TAIL_STEP("a0") MCU_MVE_TAIL_STEP("a1") MCU_MVE_TAIL_STEP("a2"),
                          [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2));
    }
    return mcu_vset4_s32(a0, a1, a2, 0);
}
#undef MCU_MVE_TAIL_STEP
#undef MCU_MVE_TAIL_LOOP
#else
static mcu_s32x4 dot_rows(const int8_t *x, const int8_t *w, int32_t chunks, int32_t rows) {
    int32_t acc[4] = {0, 0, 0, 0};
    for (int32_t g = 0; g < chunks; ++g) {
        mcu_s8x16 p = mcu_vld_s8(x + 16 * g);
        for (int32_t r = 0; r < rows; ++r) {
            acc[r] = mcu_vmladava_s8(acc[r], p, mcu_vld_s8(w + 16 * (g * rows + r)));
        }
    }
    return mcu_vset4_s32(acc[0], acc[1], acc[2], acc[3]);
}
#endif

/* The scales of channels o..o+3: bias', multipliers, shifts, from the separate arrays or
 * (`packed`, a constant after inlining) from the packed blocks (mcu_mve_gemm.h); lanes past the
 * channels: 0 (only stored lanes count). */
typedef struct {
    mcu_s32x4 bias, multiplier, shift;
} quad_scales;

MCU_MVE_INLINE quad_scales scales_of(const mcu_mve_gemm_output *output, int32_t o, mcu_pred lanes, int32_t packed) {
    quad_scales scales;
    if (packed) {
        const int32_t *block = output->packed + 3 * o;
        scales.bias = mcu_vld_s32(block);
        scales.multiplier = mcu_vld_s32(block + 4);
        scales.shift = mcu_vld_s32(block + 8);
    } else {
        scales.bias = mcu_vld_s32_z(output->bias + o, lanes);
        scales.multiplier = mcu_vld_s32_z(output->multiplier + o, lanes);
        scales.shift = mcu_vld_s32_z(output->shift + o, lanes);
    }
    return scales;
}

/* The remainder block: channels o..o+rows-1, predicated loads and stores. */
MCU_MVE_INLINE void tail_block(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                               const int8_t *w, int32_t chunks, int32_t o, int32_t rows, int8_t *out0, int8_t *out1,
                               int32_t packed) {
    mcu_pred lanes = mcu_vctp32(rows);
    quad_scales scales = scales_of(output, o, lanes, packed);
    mcu_s32x4 low = mcu_vdup_s32(output->activation.min), high = mcu_vdup_s32(output->activation.max);
    for (int32_t which = 0; which < 2; ++which) {
        const int8_t *column = which == 0 ? column0 : column1;
        if (column != NULL) {
            mcu_s32x4 sums = mcu_vadd_s32(dot_rows(column, w, chunks, rows), scales.bias);
            mcu_s32x4 values;
            if (output->right_shifts) {
                values = mcu_mve_output_right(sums, scales.multiplier, scales.shift, output->output_offset, low, high);
            } else {
                mcu_mve_scale scale = mcu_mve_scale_of(scales.multiplier, scales.shift);
                values = mcu_mve_output(sums, &scale, output->output_offset, low, high);
            }
            mcu_vst_s32_as_s8_p((which == 0 ? out0 : out1) + o, values, lanes);
        }
    }
}


#if MCU_MVE_NATIVE
/* The output stage of a 2 x 4 block whose shifts are all <= -1, in asm (the compiler spills
 * the bounds and the scales otherwise): bias', VQRDMULH, the rounding fix-up, VRSHL, offset,
 * clamp, two 4-byte stores; 23 instructions for 8 outputs (mcu_mve_output_right). */
static inline void store_2x4_right(mcu_s32x4 first, mcu_s32x4 second, const int32_t *multiplier,
                                   const int32_t *shift, const int32_t *bias, int32_t offset, int32_t low,
                                   int32_t high, int8_t *out0, int8_t *out1) {
    __asm__ volatile(
        "vldrw.32 q4, [%[bias]]\n\t"
        "vadd.i32 %q[p], %q[p], q4\n\t"
        "vadd.i32 %q[q], %q[q], q4\n\t"
        "vldrw.32 q4, [%[multiplier]]\n\t"
        "vqrdmulh.s32 %q[p], %q[p], q4\n\t"
        "vqrdmulh.s32 %q[q], %q[q], q4\n\t"
        "vshr.s32 q4, %q[p], #31\n\t"
        "vqadd.s32 %q[p], %q[p], q4\n\t"
        "vshr.s32 q4, %q[q], #31\n\t"
        "vqadd.s32 %q[q], %q[q], q4\n\t"
        "vldrw.32 q4, [%[shift]]\n\t"
        "vrshl.s32 %q[p], %q[p], q4\n\t"
        "vrshl.s32 %q[q], %q[q], q4\n\t"
        "vqadd.s32 %q[p], %q[p], %[offset]\n\t"
        "vqadd.s32 %q[q], %q[q], %[offset]\n\t"
        "vdup.32 q4, %[low]\n\t"
        "vmax.s32 %q[p], %q[p], q4\n\t"
        "vmax.s32 %q[q], %q[q], q4\n\t"
        "vdup.32 q4, %[high]\n\t"
        "vmin.s32 %q[p], %q[p], q4\n\t"
        "vmin.s32 %q[q], %q[q], q4\n\t"
        "vstrb.32 %q[p], [%[out0]]\n\t"
        "vstrb.32 %q[q], [%[out1]]\n\t"
        : [p] "+w"(first), [q] "+w"(second)
        : [bias] "r"(bias), [multiplier] "r"(multiplier), [shift] "r"(shift), [offset] "r"(offset), [low] "r"(low),
          [high] "r"(high), [out0] "l"(out0), [out1] "l"(out1)
        : "q4", "memory");
}
#endif

/* The scales of the whole block at channel o, unpredicated; `packed` a constant after inlining. */
MCU_MVE_INLINE quad_scales whole_scales(const mcu_mve_gemm_output *output, int32_t o, int32_t packed) {
    quad_scales scales;
    if (packed) {
        scales.bias = mcu_vld_s32(output->packed + 3 * o);
        scales.multiplier = mcu_vld_s32(output->packed + 3 * o + 4);
        scales.shift = mcu_vld_s32(output->packed + 3 * o + 8);
    } else {
        scales.bias = mcu_vld_s32(output->bias + o);
        scales.multiplier = mcu_vld_s32(output->multiplier + o);
        scales.shift = mcu_vld_s32(output->shift + o);
    }
    return scales;
}

/* bias' + the output stage of one column's four channels, stored at out. */
MCU_MVE_INLINE void store_quad(mcu_s32x4 sums, const quad_scales *scales, const mcu_mve_scale *scale, int32_t right,
                               int32_t offset, mcu_s32x4 low, mcu_s32x4 high, int8_t *out) {
    sums = mcu_vadd_s32(sums, scales->bias);
    mcu_vst_s32_as_s8(out, right ? mcu_mve_output_right(sums, scales->multiplier, scales->shift, offset, low, high)
                                 : mcu_mve_output(sums, scale, offset, low, high));
}

/* The whole blocks of four channels; `right` and `packed` (constants after inlining): every
 * shift <= -1; the scales packed by block. */
MCU_MVE_INLINE void quad_blocks(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                                const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1,
                                int32_t right, int32_t packed) {
    int32_t chunks = row / 16, offset = output->output_offset;
    mcu_s32x4 low = mcu_vdup_s32(output->activation.min), high = mcu_vdup_s32(output->activation.max);
    for (int32_t o = 0; o < whole; o += 4) {
        const int8_t *block = w + o * row;
#if MCU_MVE_NATIVE
        if (right && column1 != NULL) {
            mcu_s32x4 sums0, sums1;
            const int32_t *scales = packed ? output->packed + 3 * o : NULL;
            dot_2x4(column0, column1, block, chunks, &sums0, &sums1);
            store_2x4_right(sums0, sums1, packed ? scales + 4 : output->multiplier + o,
                            packed ? scales + 8 : output->shift + o, packed ? scales : output->bias + o, offset,
                            output->activation.min, output->activation.max, out0 + o, out1 + o);
            continue;
        }
#endif
        quad_scales scales = whole_scales(output, o, packed);
        mcu_mve_scale scale = mcu_mve_scale_of(scales.multiplier, scales.shift);
        mcu_s32x4 first, second;
        if (column1 != NULL) {
            dot_2x4(column0, column1, block, chunks, &first, &second);
            store_quad(second, &scales, &scale, right, offset, low, high, out1 + o);
        } else {
            first = dot_1x4(column0, block, chunks);
        }
        store_quad(first, &scales, &scale, right, offset, low, high, out0 + o);
    }
}

static void quad_blocks_right(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                              const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    quad_blocks(output, column0, column1, w, row, whole, out0, out1, 1, 0);
}

static void quad_blocks_any(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                            const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    quad_blocks(output, column0, column1, w, row, whole, out0, out1, 0, 0);
}

static void quad_blocks_packed(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                               const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    if (output->right_shifts) {   /* a single column or Kp = 16 */
        quad_blocks(output, column0, column1, w, row, whole, out0, out1, 1, 1);
    } else {
        quad_blocks(output, column0, column1, w, row, whole, out0, out1, 0, 1);
    }
}

/* The pair loop of the packed scales (every whole block of two columns, shifts <= -1, Kp >= 32):
 * per block the dot products (the first chunk VMLADAV, then 30 instructions per 32 k), the
 * eight sums into two vectors, then bias', VQRDMULH, the rounding fix-up, VRSHL, offset, clamp
 * with the scales loaded by post-increment from the packed block. Without the fix-up when the
 * clamp's low bound is at least the output offset: the fix-up only moves a negative value
 * (which rounds to <= 0 either way) and every result <= offset clamps to the low bound. */
typedef struct {
    const int8_t *column0, *column1;   /*  0,  4 */
    const int8_t *w;                   /*  8: advances block by block to w_end */
    const int32_t *packed;             /* 12 */
    int8_t *out0, *out1;               /* 16, 20: advanced by 4 per block */
    int32_t loops;                     /* 24: chunks / 2 >= 1 (two chunks per loop) */
    const int8_t *w_end;               /* 28 */
    int32_t offset, low, high;         /* 32, 36, 40 */
    int32_t chunks;                    /* 44: Kp / 16 >= 2 */
} pair_loop_args;

#if MCU_MVE_NATIVE
#define MCU_MVE_PAIR_STEP(op)                                                                   \
    "vldrb.8 q0, [r1], #16\n\t"                                                                 \
    "vldrb.8 q1, [r3], #16\n\t"                                                                 \
    "vldrb.8 q2, [r5], #16\n\t" op " r0, q0, q2\n\t" op " r8, q1, q2\n\t"                      \
    "vldrb.8 q2, [r5], #16\n\t" op " r2, q0, q2\n\t" op " r10, q1, q2\n\t"                     \
    "vldrb.8 q2, [r5], #16\n\t" op " r4, q0, q2\n\t" op " r12, q1, q2\n\t"                     \
    "vldrb.8 q2, [r5], #16\n\t" op " r6, q0, q2\n\t" op " lr, q1, q2\n\t"
#define MCU_MVE_FIXUP                                                                           \
    "vshr.s32 q2, q0, #31\n\t" "vqadd.s32 q0, q0, q2\n\t" "vshr.s32 q2, q1, #31\n\t" "vqadd.s32 q1, q1, q2\n\t"
/* r9 = args, r1 / r3 = the columns, r5 = w, r7 = the chunk count, r11 = the packed scales; sums:
 * column 0 in r0, r2, r4, r6, column 1 in r8, r10, r12, lr; q4 / q5 = the bounds, q6 = offset. */
#define MCU_MVE_PAIR_LOOP(fixup, entry)                                                                \
    __asm__ volatile(                                                                           \
        "push {r4-r11, lr}\n\t" "vpush {d8-d13}\n\t" "mov r9, r0\n\t"                           \
        "ldr r5, [r9, #8]\n\t" "ldr r11, [r9, #12]\n\t"                                        \
        "ldr r0, [r9, #32]\n\t" "vdup.32 q6, r0\n\t" "ldr r0, [r9, #36]\n\t" "vdup.32 q4, r0\n\t" \
        "ldr r0, [r9, #40]\n\t" "vdup.32 q5, r0\n"                                            \
        "1:\n\t" "ldrd r1, r3, [r9]\n\t" "ldr r7, [r9, #24]\n\t"                               \
        MCU_MVE_PAIR_STEP("vmladav.s8") entry                                                  \
        "2:\n\t" MCU_MVE_PAIR_STEP("vmladava.s8")                                              \
        "3:\n\t" MCU_MVE_PAIR_STEP("vmladava.s8") "subs r7, r7, #1\n\t" "bne 2b\n\t"             \
        "vmov q0[2], q0[0], r0, r4\n\t" "vmov q0[3], q0[1], r2, r6\n\t"                        \
        "vmov q1[2], q1[0], r8, r12\n\t" "vmov q1[3], q1[1], r10, lr\n\t"                      \
        "vldrw.32 q2, [r11], #16\n\t" "vadd.i32 q0, q0, q2\n\t" "vadd.i32 q1, q1, q2\n\t"       \
        "vldrw.32 q2, [r11], #16\n\t" "vqrdmulh.s32 q0, q0, q2\n\t" "vqrdmulh.s32 q1, q1, q2\n\t" \
        fixup                                                                                   \
        "vldrw.32 q2, [r11], #16\n\t" "vrshl.s32 q0, q0, q2\n\t" "vrshl.s32 q1, q1, q2\n\t"     \
        "vqadd.s32 q0, q0, q6\n\t" "vqadd.s32 q1, q1, q6\n\t"                                  \
        "vmax.s32 q0, q0, q4\n\t" "vmax.s32 q1, q1, q4\n\t"                                    \
        "vmin.s32 q0, q0, q5\n\t" "vmin.s32 q1, q1, q5\n\t"                                    \
        "ldrd r0, r2, [r9, #16]\n\t" "vstrb.32 q0, [r0], #4\n\t" "vstrb.32 q1, [r2], #4\n\t"    \
        "strd r0, r2, [r9, #16]\n\t" "ldr r0, [r9, #28]\n\t" "cmp r5, r0\n\t" "bne 1b\n\t"      \
        "vpop {d8-d13}\n\t" "pop {r4-r11, pc}\n\t")

/* Odd chunk counts enter the two-chunk loop at its top, even ones at its second half. */
#define MCU_MVE_PAIR_FUNCTION(name, fixup, entry)                                               \
    __attribute__((naked, noinline)) static void name(__attribute__((unused)) pair_loop_args *args) { \
        MCU_MVE_PAIR_LOOP(fixup, entry);                                                        \
    }
MCU_MVE_PAIR_FUNCTION(pair_loop_fixup_odd, MCU_MVE_FIXUP, "")
MCU_MVE_PAIR_FUNCTION(pair_loop_fixup_even, MCU_MVE_FIXUP, "b 3f\n")
MCU_MVE_PAIR_FUNCTION(pair_loop_clamped_odd, "", "")
MCU_MVE_PAIR_FUNCTION(pair_loop_clamped_even, "", "b 3f\n")
#undef MCU_MVE_PAIR_FUNCTION
#undef MCU_MVE_PAIR_LOOP
#undef MCU_MVE_FIXUP
#undef MCU_MVE_PAIR_STEP
#else
/* The same loop in portable C (the host): the fix-up skipped exactly where the asm skips it. */
static void pair_loop_portable(pair_loop_args *args, int32_t fixup) {
    mcu_s32x4 low = mcu_vdup_s32(args->low), high = mcu_vdup_s32(args->high), zero = mcu_vdup_s32(0);
    int32_t chunks = args->chunks;
    for (; args->w != args->w_end; args->w += 64 * chunks, args->packed += 12, args->out0 += 4, args->out1 += 4) {
        mcu_s32x4 sums[2];
        dot_2x4(args->column0, args->column1, args->w, chunks, &sums[0], &sums[1]);
        for (int32_t which = 0; which < 2; ++which) {
            mcu_s32x4 value = mcu_vqrdmulh_s32(mcu_vadd_s32(sums[which], mcu_vld_s32(args->packed)),
                                               mcu_vld_s32(args->packed + 4));
            value = mcu_vqadd_s32(value, fixup ? mcu_vsign_s32(value) : zero);
            value = mcu_vqadd_n_s32(mcu_vrshl_s32(value, mcu_vld_s32(args->packed + 8)), args->offset);
            mcu_vst_s32_as_s8(which == 0 ? args->out0 : args->out1, mcu_vmin_s32(mcu_vmax_s32(value, low), high));
        }
    }
}
#endif

/* The whole blocks with packed scales: the pair loop where it applies, else quad_blocks. */
static void packed_blocks(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                          const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    if (!output->right_shifts || column1 == NULL || row < 32) {
        quad_blocks_packed(output, column0, column1, w, row, whole, out0, out1);
        return;
    }
    int32_t chunks = row / 16;
    pair_loop_args args = {column0, column1, w, output->packed, out0, out1, chunks / 2, w + whole * row,
                           output->output_offset, output->activation.min, output->activation.max, chunks};
    int32_t fixup = output->activation.min < output->output_offset;
#if MCU_MVE_NATIVE
    if (chunks % 2 != 0) {
        (fixup ? pair_loop_fixup_odd : pair_loop_clamped_odd)(&args);
    } else {
        (fixup ? pair_loop_fixup_even : pair_loop_clamped_even)(&args);
    }
#else
    pair_loop_portable(&args, fixup);
#endif
}

/* The remainder block out of line: inlined, its asm and branches cost the quad loops of its
 * caller registers (+1.3 % on a 96 -> 24 pointwise conv). */
#if defined(__GNUC__)
#define MCU_MVE_NOINLINE __attribute__((noinline))
#else
#define MCU_MVE_NOINLINE
#endif
MCU_MVE_NOINLINE static void tail_plain(const mcu_mve_gemm_output *output, const int8_t *column0,
                                        const int8_t *column1, const int8_t *w, int32_t chunks, int32_t o,
                                        int32_t rows, int8_t *out0, int8_t *out1) {
    tail_block(output, column0, column1, w, chunks, o, rows, out0, out1, 0);
}

MCU_MVE_NOINLINE static void tail_packed(const mcu_mve_gemm_output *output, const int8_t *column0,
                                         const int8_t *column1, const int8_t *w, int32_t chunks, int32_t o,
                                         int32_t rows, int8_t *out0, int8_t *out1) {
    tail_block(output, column0, column1, w, chunks, o, rows, out0, out1, 1);
}

void mcu_mve_gemm(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                  const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1) {
    int32_t whole = channels & ~3;
    if (output->right_shifts) {
        quad_blocks_right(output, column0, column1, w, row, whole, out0, out1);
    } else {
        quad_blocks_any(output, column0, column1, w, row, whole, out0, out1);
    }
    if (whole < channels) {
        tail_plain(output, column0, column1, w + whole * row, row / 16, whole, channels - whole, out0, out1);
    }
}

void mcu_mve_gemm_few(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                      const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1) {
    tail_block(output, column0, column1, w, row / 16, 0, channels, out0, out1, 0);
}

void mcu_mve_gemm_packed(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                         const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1) {
    int32_t whole = channels & ~3;
    if (whole > 0) {
        packed_blocks(output, column0, column1, w, row, whole, out0, out1);
    }
    if (whole < channels) {
        tail_packed(output, column0, column1, w + whole * row, row / 16, whole, channels - whole, out0, out1);
    }
}
