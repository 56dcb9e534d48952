/*
 * mcu_mve_depthwise_taps.h - the inner loops of the _mve depthwise band path (internal
 * header of depthwise_mve.c): the taps of a pixel pair / one pixel over the group-major band
 * (8 bytes a tap, post-increment loads: 11 / 6 instructions per tap), and the output stage
 * of a full group with right shifts only, in asm on MVE cores (GCC 12 spills the four sums
 * and the scales otherwise); portable C elsewhere, the same results.
 *
 *   sums (a, b: pixel at rows[i] + offset; c, d: the pixel `step` bytes further)
 *        += sum over kH rows, kW taps of W[tap] * X[tap]        (even / odd lanes)
 */
#ifndef MCU_MVE_DEPTHWISE_TAPS_H
#define MCU_MVE_DEPTHWISE_TAPS_H

#include "mcu_mve_internal.h"

#if defined(__GNUC__)
#define MCU_DW_INLINE static inline __attribute__((always_inline))   /* sums stay in registers */
#else
#define MCU_DW_INLINE static inline
#endif

#if MCU_MVE_NATIVE
/* sums (a, b: pixel at rows[i] + offset; c, d: the pixel `step` bytes further) += the
 * kH x kW taps; w: the group's taps, 8 bytes each. 3 x 3 fully unrolled, 11 per tap. */
#define MCU_DW_TAP                              \
    "vldrb.s16 q4, [%[w]], #8\n\t"            \
    "vldrb.s16 q5, [%[x]], #8\n\t"            \
    "vldrb.s16 q6, [%[y]], #8\n\t"            \
    "vmullb.s16 q7, q5, q4\n\t"               \
    "vadd.i32 %q[a], %q[a], q7\n\t"           \
    "vmullt.s16 q7, q5, q4\n\t"               \
    "vadd.i32 %q[b], %q[b], q7\n\t"           \
    "vmullb.s16 q7, q6, q4\n\t"               \
    "vadd.i32 %q[c], %q[c], q7\n\t"           \
    "vmullt.s16 q7, q6, q4\n\t"               \
    "vadd.i32 %q[d], %q[d], q7\n\t"

MCU_DW_INLINE void pair_taps(const int8_t *const *rows, int32_t kernel_h, int32_t kernel_w, int32_t offset,
                             int32_t step, const int8_t *w, mcu_s32x4 sums[4]) {
    mcu_s32x4 a = sums[0], b = sums[1], c = sums[2], d = sums[3];
    const int8_t *x, *y;
    int32_t taps;
    if (kernel_w == 3) {
        __asm__ volatile(
            "1:\n\t"
            "ldr %[x], [%[rows]], #4\n\t"
            "add %[x], %[x], %[offset]\n\t"
            "add %[y], %[x], %[step]\n\t"
            MCU_DW_TAP MCU_DW_TAP MCU_DW_TAP
            "subs %[kh], %[kh], #1\n\t"
            "bne 1b\n\t"
            : [a] "+w"(a), [b] "+w"(b), [c] "+w"(c), [d] "+w"(d), [x] "=&l"(x), [y] "=&l"(y), [w] "+l"(w),
              [rows] "+r"(rows), [kh] "+r"(kernel_h)
            : [offset] "r"(offset), [step] "r"(step)
            : "q4", "q5", "q6", "q7", "cc", "memory");
    } else {
        __asm__ volatile(
            "1:\n\t"
            "ldr %[x], [%[rows]], #4\n\t"
            "add %[x], %[x], %[offset]\n\t"
            "add %[y], %[x], %[step]\n\t"
            "mov %[taps], %[kw]\n"
            "2:\n\t"
            MCU_DW_TAP
            "subs %[taps], %[taps], #1\n\t"
            "bne 2b\n\t"
            "subs %[kh], %[kh], #1\n\t"
            "bne 1b\n\t"
            : [a] "+w"(a), [b] "+w"(b), [c] "+w"(c), [d] "+w"(d), [x] "=&l"(x), [y] "=&l"(y), [w] "+l"(w),
              [rows] "+r"(rows), [kh] "+r"(kernel_h), [taps] "=&r"(taps)
            : [offset] "r"(offset), [step] "r"(step), [kw] "r"(kernel_w)
            : "q4", "q5", "q6", "q7", "cc", "memory");
    }
    sums[0] = a;
    sums[1] = b;
    sums[2] = c;
    sums[3] = d;
}
#undef MCU_DW_TAP
#else
MCU_DW_INLINE void pair_taps(const int8_t *const *rows, int32_t kernel_h, int32_t kernel_w, int32_t offset,
                             int32_t step, const int8_t *w, mcu_s32x4 sums[4]) {
    for (int32_t i = 0; i < kernel_h; ++i) {
        const int8_t *x = rows[i] + offset;
        for (int32_t j = 0; j < kernel_w; ++j, w += 8, x += 8) {
            mcu_s16x8 weights = mcu_vld_s8_s16(w), first = mcu_vld_s8_s16(x), second = mcu_vld_s8_s16(x + step);
            sums[0] = mcu_vadd_s32(sums[0], mcu_vmullb_s16(first, weights));
            sums[1] = mcu_vadd_s32(sums[1], mcu_vmullt_s16(first, weights));
            sums[2] = mcu_vadd_s32(sums[2], mcu_vmullb_s16(second, weights));
            sums[3] = mcu_vadd_s32(sums[3], mcu_vmullt_s16(second, weights));
        }
    }
}
#endif

#if MCU_MVE_NATIVE
#define MCU_DW_SINGLE_TAP                       \
    "vldrb.s16 q4, [%[w]], #8\n\t"            \
    "vldrb.s16 q5, [%[x]], #8\n\t"            \
    "vmullb.s16 q6, q5, q4\n\t"               \
    "vadd.i32 %q[a], %q[a], q6\n\t"           \
    "vmullt.s16 q6, q5, q4\n\t"               \
    "vadd.i32 %q[b], %q[b], q6\n\t"

/* One pixel (the last of an odd row): 6 instructions per tap for 8 MACs. */
MCU_DW_INLINE void single_taps(const int8_t *const *rows, int32_t kernel_h, int32_t kernel_w, int32_t offset,
                        const int8_t *w, mcu_s32x4 sums[2]) {
    mcu_s32x4 a = sums[0], b = sums[1];
    const int8_t *x;
    int32_t taps;
    __asm__ volatile(
        "1:\n\t"
        "ldr %[x], [%[rows]], #4\n\t"
        "add %[x], %[x], %[offset]\n\t"
        "mov %[taps], %[kw]\n"
        "2:\n\t"
        MCU_DW_SINGLE_TAP
        "subs %[taps], %[taps], #1\n\t"
        "bne 2b\n\t"
        "subs %[kh], %[kh], #1\n\t"
        "bne 1b\n\t"
        : [a] "+w"(a), [b] "+w"(b), [x] "=&l"(x), [w] "+l"(w), [rows] "+r"(rows), [kh] "+r"(kernel_h),
          [taps] "=&r"(taps)
        : [offset] "r"(offset), [kw] "r"(kernel_w)
        : "q4", "q5", "q6", "cc", "memory");
    sums[0] = a;
    sums[1] = b;
}
#undef MCU_DW_SINGLE_TAP

/* store_group for two pixels of a full group whose shifts are all <= -1, the scales loaded
 * once for both (block: the group's prepared words): 34 instructions for 16 outputs. */
MCU_DW_INLINE void store_pair_right(const int32_t *block, const mcu_s32x4 sums[4], int32_t offset, int32_t low,
                             int32_t high, int8_t *first, int8_t *second) {
    mcu_s32x4 a = sums[0], b = sums[1], c = sums[2], d = sums[3];
#define MCU_DW_ROUND(v) "vshr.s32 q4, %q[" v "], #31\n\tvqadd.s32 %q[" v "], %q[" v "], q4\n\t"
    __asm__ volatile(
        "vldrw.32 q4, [%[s], #32]\n\t"
        "vldrw.32 q5, [%[s], #48]\n\t"
        "vqrdmulh.s32 %q[a], %q[a], q4\n\t"
        "vqrdmulh.s32 %q[c], %q[c], q4\n\t"
        "vqrdmulh.s32 %q[b], %q[b], q5\n\t"
        "vqrdmulh.s32 %q[d], %q[d], q5\n\t"
        MCU_DW_ROUND("a") MCU_DW_ROUND("b") MCU_DW_ROUND("c") MCU_DW_ROUND("d")
        "vldrw.32 q4, [%[s], #64]\n\t"
        "vldrw.32 q5, [%[s], #80]\n\t"
        "vrshl.s32 %q[a], %q[a], q4\n\t"
        "vrshl.s32 %q[c], %q[c], q4\n\t"
        "vrshl.s32 %q[b], %q[b], q5\n\t"
        "vrshl.s32 %q[d], %q[d], q5\n\t"
        "vqmovnb.s32 q6, %q[a]\n\t"
        "vqmovnt.s32 q6, %q[b]\n\t"
        "vqmovnb.s32 q7, %q[c]\n\t"
        "vqmovnt.s32 q7, %q[d]\n\t"
        "vqadd.s16 q6, q6, %[offset]\n\t"
        "vqadd.s16 q7, q7, %[offset]\n\t"
        "vdup.16 q4, %[low]\n\t"
        "vdup.16 q5, %[high]\n\t"
        "vmax.s16 q6, q6, q4\n\t"
        "vmax.s16 q7, q7, q4\n\t"
        "vmin.s16 q6, q6, q5\n\t"
        "vmin.s16 q7, q7, q5\n\t"
        "vstrb.16 q6, [%[first]]\n\t"
        "vstrb.16 q7, [%[second]]\n\t"
        : [a] "+w"(a), [b] "+w"(b), [c] "+w"(c), [d] "+w"(d)
        : [s] "r"(block), [offset] "r"(offset), [low] "r"(low), [high] "r"(high), [first] "l"(first),
          [second] "l"(second)
        : "q4", "q5", "q6", "q7", "memory");
#undef MCU_DW_ROUND
}

/* The same for one pixel: 20 instructions for 8 outputs. */
MCU_DW_INLINE void store_single_right(const int32_t *block, const mcu_s32x4 sums[2], int32_t offset, int32_t low,
                               int32_t high, int8_t *out) {
    mcu_s32x4 a = sums[0], b = sums[1];
    __asm__ volatile(
        "vldrw.32 q4, [%[s], #32]\n\t"
        "vldrw.32 q5, [%[s], #48]\n\t"
        "vqrdmulh.s32 %q[a], %q[a], q4\n\t"
        "vqrdmulh.s32 %q[b], %q[b], q5\n\t"
        "vshr.s32 q4, %q[a], #31\n\t"
        "vqadd.s32 %q[a], %q[a], q4\n\t"
        "vshr.s32 q4, %q[b], #31\n\t"
        "vqadd.s32 %q[b], %q[b], q4\n\t"
        "vldrw.32 q4, [%[s], #64]\n\t"
        "vldrw.32 q5, [%[s], #80]\n\t"
        "vrshl.s32 %q[a], %q[a], q4\n\t"
        "vrshl.s32 %q[b], %q[b], q5\n\t"
        "vqmovnb.s32 q6, %q[a]\n\t"
        "vqmovnt.s32 q6, %q[b]\n\t"
        "vqadd.s16 q6, q6, %[offset]\n\t"
        "vdup.16 q4, %[low]\n\t"
        "vdup.16 q5, %[high]\n\t"
        "vmax.s16 q6, q6, q4\n\t"
        "vmin.s16 q6, q6, q5\n\t"
        "vstrb.16 q6, [%[out]]\n\t"
        : [a] "+w"(a), [b] "+w"(b)
        : [s] "r"(block), [offset] "r"(offset), [low] "r"(low), [high] "r"(high), [out] "l"(out)
        : "q4", "q5", "q6", "memory");
}
#else
/* One pixel (the last of an odd row). */
MCU_DW_INLINE void single_taps(const int8_t *const *rows, int32_t kernel_h, int32_t kernel_w, int32_t offset,
                        const int8_t *w, mcu_s32x4 sums[2]) {
    for (int32_t i = 0; i < kernel_h; ++i) {
        const int8_t *x = rows[i] + offset;
        for (int32_t j = 0; j < kernel_w; ++j, w += 8, x += 8) {
            mcu_s16x8 weights = mcu_vld_s8_s16(w), values = mcu_vld_s8_s16(x);
            sums[0] = mcu_vadd_s32(sums[0], mcu_vmullb_s16(values, weights));
            sums[1] = mcu_vadd_s32(sums[1], mcu_vmullt_s16(values, weights));
        }
    }
}
#endif

#endif /* MCU_MVE_DEPTHWISE_TAPS_H */
