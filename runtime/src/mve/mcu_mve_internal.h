/*
 * mcu_mve_internal.h - requantization shared by the _mve kernels (internal header): four
 * output channels at a time, TFLite's MultiplyByQuantizedMultiplier with its double
 * rounding, bit for bit, for every int32 accumulator:
 *
 *   srdhm(x << left, m) = VQRDMULH(VSHL(x, left), m)           (saturating exactly like gemmlowp)
 *   rdbpot(v, right)    = VRSHL(VQADD(v, (v >> 31) & mask), -right),  mask = -1 if right > 0
 *
 * VRSHL rounds half up; subtracting 1 from negative values first makes it round half away
 * from zero (VQADD: INT32_MIN stays INT32_MIN, which rounds the same).
 */
#ifndef MCU_MVE_INTERNAL_H
#define MCU_MVE_INTERNAL_H

#include "mcu_internal.h"
#include "mcu_mve_simd.h"

/* The scales of four channels: left shifts, -right shifts, the rounding fix-up mask. */
typedef struct {
    mcu_s32x4 multiplier, left, negative_right, mask;
} mcu_mve_scale;

static inline mcu_mve_scale mcu_mve_scale_of(mcu_s32x4 multiplier, mcu_s32x4 shift) {
    mcu_mve_scale scale;
    mcu_s32x4 zero = mcu_vdup_s32(0);
    scale.multiplier = multiplier;
    scale.left = mcu_vmax_s32(shift, zero);
    scale.negative_right = mcu_vmin_s32(shift, zero);
    scale.mask = mcu_vsign_s32(scale.negative_right);
    return scale;
}

static inline mcu_s32x4 mcu_mve_requantize(mcu_s32x4 acc, const mcu_mve_scale *scale) {
    mcu_s32x4 value = mcu_vqrdmulh_s32(mcu_vshl_s32(acc, scale->left), scale->multiplier);
    value = mcu_vqadd_s32(value, mcu_vand_s32(mcu_vsign_s32(value), scale->mask));
    return mcu_vrshl_s32(value, scale->negative_right);
}

/* requantize + offset, clamped to [low, high] (vectors): the saturating add keeps the
 * order against the int8 bounds, so the result is the reference's exact clamp_add. */
static inline mcu_s32x4 mcu_mve_output(mcu_s32x4 acc, const mcu_mve_scale *scale, int32_t offset, mcu_s32x4 low,
                                       mcu_s32x4 high) {
    mcu_s32x4 value = mcu_vqadd_n_s32(mcu_mve_requantize(acc, scale), offset);
    return mcu_vmin_s32(mcu_vmax_s32(value, low), high);
}

/* Whether every one of `channels` shifts is <= -1 (no left shift, a right shift of at least
 * one): then the requantization needs only the multipliers and the right shifts. */
static inline int32_t mcu_mve_all_right_shifts(const int32_t *shift, int32_t channels) {
    for (int32_t c = 0; c < channels; ++c) {
        if (shift[c] > -1) {
            return 0;
        }
    }
    return 1;
}

/* mcu_mve_output for channels whose shifts are all <= -1. */
static inline mcu_s32x4 mcu_mve_output_right(mcu_s32x4 acc, mcu_s32x4 multiplier, mcu_s32x4 negative_right,
                                             int32_t offset, mcu_s32x4 low, mcu_s32x4 high) {
    mcu_s32x4 value = mcu_vqrdmulh_s32(acc, multiplier);
    value = mcu_vrshl_s32(mcu_vqadd_s32(value, mcu_vsign_s32(value)), negative_right);
    return mcu_vmin_s32(mcu_vmax_s32(mcu_vqadd_n_s32(value, offset), low), high);
}

/* Copy / fill `count` bytes, 16 at a time (the last step predicated). */
static inline void mcu_mve_copy(int8_t *target, const int8_t *source, int32_t count) {
    for (; count > 0; count -= 16, source += 16, target += 16) {
        mcu_pred lanes = mcu_vctp8(count);
        mcu_vst_s8_p(target, mcu_vld_s8_z(source, lanes), lanes);
    }
}

static inline void mcu_mve_fill(int8_t *target, int32_t value, int32_t count) {
    mcu_s8x16 values = mcu_vdup_s8(value);
    for (; count > 0; count -= 16, target += 16) {
        mcu_vst_s8_p(target, values, mcu_vctp8(count));
    }
}

/* K rounded up to a multiple of 16: the row length of _mve conv / fully connected weights. */
static inline int32_t mcu_mve_row_length(int32_t depth) {
    return (depth + 15) & ~15;
}

#endif /* MCU_MVE_INTERNAL_H */
