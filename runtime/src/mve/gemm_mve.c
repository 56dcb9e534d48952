/*
 * gemm_mve.c - the dot products and output stage of the _mve conv and fully connected
 * kernels (mcu_mve_gemm.h): blocks of 2 columns x 4 quad rows (8 VMLADAVA per 16 k), 1 x 4
 * for a single column, and the remainder block of 1..3 rows; then the vector requantization
 * of four channels at a time (mcu_mve_internal.h), the channels' scales loaded once per
 * block and shared by both columns.
 */
#include "mcu_mve_gemm.h"

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

/* The last block of `rows` < 4 rows (interleaved 16 bytes at a time among themselves). */
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

/* The remainder block: channels o..o+rows-1, predicated loads and stores. */
static void tail_block(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                       const int8_t *w, int32_t chunks, int32_t o, int32_t rows, int8_t *out0, int8_t *out1) {
    mcu_pred lanes = mcu_vctp32(rows);
    mcu_mve_scale scale = mcu_mve_scale_of(mcu_vld_s32_z(output->multiplier + o, lanes),
                                           mcu_vld_s32_z(output->shift + o, lanes));
    mcu_s32x4 bias = mcu_vld_s32_z(output->bias + o, lanes);
    mcu_s32x4 low = mcu_vdup_s32(output->activation.min), high = mcu_vdup_s32(output->activation.max);
    for (int32_t which = 0; which < 2; ++which) {
        const int8_t *column = which == 0 ? column0 : column1;
        if (column != NULL) {
            mcu_s32x4 sums = mcu_vadd_s32(dot_rows(column, w, chunks, rows), bias);
            mcu_vst_s32_as_s8_p((which == 0 ? out0 : out1) + o,
                                mcu_mve_output(sums, &scale, output->output_offset, low, high), lanes);
        }
    }
}

#if defined(__GNUC__)
#define MCU_MVE_INLINE static inline __attribute__((always_inline))
#else
#define MCU_MVE_INLINE static inline
#endif

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

/* The whole blocks of four channels; `right` (a constant after inlining): every shift <= -1. */
MCU_MVE_INLINE void quad_blocks(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                                const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1,
                                int32_t right) {
    int32_t chunks = row / 16, offset = output->output_offset;
    mcu_s32x4 low = mcu_vdup_s32(output->activation.min), high = mcu_vdup_s32(output->activation.max);
    for (int32_t o = 0; o < whole; o += 4) {
        const int8_t *block = w + o * row;
#if MCU_MVE_NATIVE
        if (right && column1 != NULL) {
            mcu_s32x4 sums0, sums1;
            dot_2x4(column0, column1, block, chunks, &sums0, &sums1);
            store_2x4_right(sums0, sums1, output->multiplier + o, output->shift + o, output->bias + o, offset,
                            output->activation.min, output->activation.max, out0 + o, out1 + o);
            continue;
        }
#endif
        mcu_s32x4 multiplier = mcu_vld_s32(output->multiplier + o), shift = mcu_vld_s32(output->shift + o);
        mcu_s32x4 bias = mcu_vld_s32(output->bias + o), first, second;
        mcu_mve_scale scale = mcu_mve_scale_of(multiplier, shift);
        if (column1 != NULL) {
            dot_2x4(column0, column1, block, chunks, &first, &second);
            second = mcu_vadd_s32(second, bias);
            mcu_vst_s32_as_s8(out1 + o, right ? mcu_mve_output_right(second, multiplier, shift, offset, low, high)
                                              : mcu_mve_output(second, &scale, offset, low, high));
        } else {
            first = dot_1x4(column0, block, chunks);
        }
        first = mcu_vadd_s32(first, bias);
        mcu_vst_s32_as_s8(out0 + o, right ? mcu_mve_output_right(first, multiplier, shift, offset, low, high)
                                          : mcu_mve_output(first, &scale, offset, low, high));
    }
}

static void quad_blocks_right(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                              const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    quad_blocks(output, column0, column1, w, row, whole, out0, out1, 1);
}

static void quad_blocks_any(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                            const int8_t *w, int32_t row, int32_t whole, int8_t *out0, int8_t *out1) {
    quad_blocks(output, column0, column1, w, row, whole, out0, out1, 0);
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
        tail_block(output, column0, column1, w + whole * row, row / 16, whole, channels - whole, out0, out1);
    }
}
