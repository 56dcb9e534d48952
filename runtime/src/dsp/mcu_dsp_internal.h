/*
 * mcu_dsp_internal.h - requantization shared by the _dsp kernels (internal header).
 *
 * TFLite's MultiplyByQuantizedMultiplier with its double rounding (mcu_fixed_point.h:
 * mcu_mbqm), bit for bit, in 6 instructions instead of 12 when the accumulator is small:
 *
 *   srdhm(acc << left, m) = smmulr(acc << (left + 1), m)      if |acc << left| < 2^30, m >= 0
 *   rdbpot(v, right)      = (v + round + ((v >> 31) & mask)) >> right,
 *                           round = 2^right / 2, mask = -1 if right > 0 else 0
 *
 * Whether a channel's accumulators are small is decided once per channel from its bias and
 * the largest dot product the kernel can form, `reach` = K * 128 * 255 (|W| <= 128,
 * |X + input_offset| <= 255): (|bias| + reach) << left < 2^30. A "wide" channel (a huge
 * bias, a left shift) takes mcu_mbqm itself.
 */
#ifndef MCU_DSP_INTERNAL_H
#define MCU_DSP_INTERNAL_H

#include "mcu_dsp_simd.h"
#include "mcu_internal.h"

/* One output channel's requantization, unpacked once per channel. */
typedef struct {
    int32_t multiplier;
    int32_t left;   /* left shift + 1 (the doubling of srdhm) */
    int32_t right;  /* rounding right shift */
    int32_t round;  /* 2^right / 2 */
    int32_t mask;   /* -1 when right > 0 */
    int32_t shift;  /* as given (the wide path) */
    int32_t wide;   /* 1: accumulators may reach 2^30 after the left shift */
} mcu_dsp_scale;

/* The largest |sum_k W[k] * (X[k] + input_offset)| over `depth` terms. */
static inline int32_t mcu_dsp_reach(int32_t depth) {
    return depth < 32768 ? depth * 128 * 255 : INT32_MAX;
}

/* Always inlined where GCC allows it: the kernels specialise their loops for the simple mode. */
#if defined(__GNUC__)
#define MCU_DSP_INLINE static inline __attribute__((always_inline))
#else
#define MCU_DSP_INLINE static inline
#endif

/* Kept out of line where inlining would leave an inline-asm block without registers. */
#if defined(__GNUC__)
#define MCU_DSP_NOINLINE static __attribute__((noinline, noclone))
#else
#define MCU_DSP_NOINLINE static
#endif

/* Whether every channel is "simple": shift <= -1 (left 0, right >= 1) and |bias| + reach
 * < 2^30 (never wide). Checked once per call; then left = 1 and mask = -1 are constants. */
static inline int32_t mcu_dsp_all_simple(const int32_t *shift, const int32_t *bias, int32_t channels,
                                         int32_t reach) {
    int32_t limit = (int32_t)(1u << 30) - reach;
    for (int32_t c = 0; c < channels; ++c) {
        uint32_t magnitude = bias == NULL ? 0u : (bias[c] < 0 ? 0u - (uint32_t)bias[c] : (uint32_t)bias[c]);
        if (shift[c] > -1 || limit <= 0 || magnitude >= (uint32_t)limit) {
            return 0;
        }
    }
    return 1;
}

/* The scale of a channel known simple (mcu_dsp_all_simple). */
MCU_DSP_INLINE mcu_dsp_scale mcu_dsp_simple_scale_of(int32_t multiplier, int32_t shift) {
    mcu_dsp_scale scale;
    scale.multiplier = multiplier;
    scale.left = 1;
    scale.right = -shift;
    scale.round = (int32_t)((uint32_t)1 << (-shift - 1));
    scale.mask = -1;
    scale.shift = shift;
    scale.wide = 0;
    return scale;
}

static inline mcu_dsp_scale mcu_dsp_scale_of(int32_t multiplier, int32_t shift, int32_t bias, int32_t reach) {
    mcu_dsp_scale scale;
    int32_t right = shift > 0 ? 0 : -shift, left = shift > 0 ? shift : 0;
    uint32_t magnitude = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias;
    int32_t limit = (int32_t)((1u << 30) >> left) - reach;   /* |bias| must stay below */
    scale.multiplier = multiplier;
    scale.left = left + 1;
    scale.right = right;
    scale.round = (int32_t)(((uint32_t)1 << right) >> 1);
    scale.mask = -(right > 0);
    scale.shift = shift;
    scale.wide = multiplier < 0 || limit <= 0 || magnitude >= (uint32_t)limit;
    return scale;
}

/* mbqm(acc, multiplier, shift) of a channel that is not wide: 6 instructions. */
MCU_DSP_INLINE int32_t mcu_dsp_requantize(int32_t acc, const mcu_dsp_scale *scale) {
    int32_t value = mcu_smmulr((int32_t)((uint32_t)acc << scale->left), scale->multiplier);
    return (value + scale->round + ((value >> 31) & scale->mask)) >> scale->right;
}

/* Output of a channel that is not wide: requantized, offset, clamped (no overflow: the
 * requantized value is below 2^30). */
MCU_DSP_INLINE int8_t mcu_dsp_output(int32_t acc, const mcu_dsp_scale *scale, int32_t offset, int32_t low,
                                    int32_t high) {
    return (int8_t)mcu_clamp(mcu_dsp_requantize(acc, scale) + offset, low, high);
}

/* Output of any channel (the wide ones take TFLite's own 64-bit form). */
MCU_DSP_INLINE int8_t mcu_dsp_output_any(int32_t acc, const mcu_dsp_scale *scale, int32_t offset, int32_t low,
                                        int32_t high) {
    if (scale->wide) {
        return (int8_t)mcu_clamp_add(mcu_mbqm(acc, scale->multiplier, scale->shift), offset, low, high);
    }
    return mcu_dsp_output(acc, scale, offset, low, high);
}

/* K rounded up to a multiple of 4: the row length of _dsp conv / fully connected weights. */
static inline int32_t mcu_dsp_row_length(int32_t depth) {
    return (depth + 3) & ~3;
}

#endif /* MCU_DSP_INTERNAL_H */
