/*
 * mcu_fixed_point.h - integer requantization primitives of the mcudeploy runtime.
 *
 * The bit-exact specification is src/mcudeploy/arithmetic/fixed_point.py (TFLite Micro's
 * reference semantics, "double rounding" build). Real multipliers are a Q0.31 significand
 * and a power-of-two exponent: real = multiplier * 2^(shift - 31), shift in [-31, 30].
 *
 *   srdhm(a, b)     = (a*b + 2^30) >> 31 (floor; equals gemmlowp's nudged truncation),
 *                     INT32_MIN * INT32_MIN saturates to INT32_MAX
 *   rdbpot(x, e)    = x / 2^e rounded half away from zero
 *   mbqm(x, m, s)   = rdbpot(srdhm(wrap32(x << max(s, 0)), m), max(-s, 0))
 *   mbqm64(x, m, s) = wrap32((x * m16 + 2^(14 - s)) >> (15 - s)),
 *                     m16 = m < 0x7FFF0000 ? (m + 2^15) >> 16 : 0x7FFF   (16x8 kernels)
 *
 * Wrapping arithmetic is done in uint32_t so that no signed overflow (undefined behaviour)
 * occurs; right shifts of negative values assume an arithmetic shift (GCC, Clang, armcc).
 */
#ifndef MCU_FIXED_POINT_H
#define MCU_FIXED_POINT_H

#include <stdint.h>

static inline int32_t mcu_wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t mcu_wrap_sub(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

static inline int32_t mcu_wrap_shift_left(int32_t x, int32_t amount) {
    return (int32_t)((uint32_t)x << amount);
}

static inline int32_t mcu_clamp(int32_t x, int32_t low, int32_t high) {
    return x < low ? low : (x > high ? high : x);
}

/* clamp(x + offset) without int32 overflow (x near INT32_MAX saturates to high). */
static inline int32_t mcu_clamp_add(int32_t x, int32_t offset, int32_t low, int32_t high) {
    int64_t sum = (int64_t)x + offset;
    return sum < low ? low : (sum > high ? high : (int32_t)sum);
}

/* gemmlowp SaturatingRoundingDoublingHighMul on int32. */
static inline int32_t mcu_srdhm(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent, halves away from zero; exponent in [0, 62]
 * (exponents above 31 occur in Softmax and give the exactly rounded quotient). */
static inline int32_t mcu_rdbpot(int32_t x, int32_t exponent) {
    if (exponent <= 0) {
        return x;
    }
    int64_t value = (int64_t)x + (((int64_t)1 << exponent) >> 1) - (x < 0);
    return (int32_t)(value >> exponent);
}

/* gemmlowp SaturatingRoundingMultiplyByPOT<exponent> on int32 raw values. */
static inline int32_t mcu_srmbpot(int32_t x, int32_t exponent) {
    if (exponent < 0) {
        return mcu_rdbpot(x, -exponent);
    }
    if (exponent == 0) {
        return x;
    }
    int32_t threshold = (int32_t)(((uint32_t)1 << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return mcu_wrap_shift_left(x, exponent);
}

/* TFLite MultiplyByQuantizedMultiplier(int32 x, multiplier, shift), shift in [-31, 30]. */
static inline int32_t mcu_mbqm(int32_t x, int32_t multiplier, int32_t shift) {
    int32_t left = shift > 0 ? shift : 0;
    int32_t right = shift > 0 ? 0 : -shift;
    return mcu_rdbpot(mcu_srdhm(mcu_wrap_shift_left(x, left), multiplier), right);
}

/* TFLite MultiplyByQuantizedMultiplier(int64 x, ...) of the 16x8 kernels: |x| < 2^47,
 * shift in [-31, 7]. */
static inline int32_t mcu_mbqm64(int64_t x, int32_t multiplier, int32_t shift) {
    int64_t reduced = multiplier < 0x7FFF0000 ? ((int64_t)multiplier + (1 << 15)) >> 16 : 0x7FFF;
    int32_t total_shift = 15 - shift;
    int64_t rounded = (x * reduced + ((int64_t)1 << (total_shift - 1))) >> total_shift;
    return (int32_t)(uint32_t)(uint64_t)rounded;
}

/* -- int16 helpers (HardSwish) -------------------------------------------------------- */
static inline int32_t mcu_wrap16(int32_t x) {
    return (int32_t)(int16_t)(uint16_t)(uint32_t)x;
}

/* gemmlowp int16 SaturatingRoundingDoublingHighMul. */
static inline int32_t mcu_srdhm16(int32_t a, int32_t b) {
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    int32_t product = a * b;
    int32_t nudge = product >= 0 ? (1 << 14) : 1 - (1 << 14);
    return mcu_wrap16((product + nudge) / (1 << 15));
}

/* TFLite HardSwish SaturatingDoublingHighMul: trunc(a*b / 2^15), no rounding nudge. */
static inline int32_t mcu_sdhm16(int32_t a, int32_t b) {
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return mcu_wrap16((a * b) / (1 << 15));
}

static inline int32_t mcu_saturating_left_shift16(int32_t x, int32_t amount) {
    int64_t shifted = (int64_t)x * ((int64_t)1 << amount);
    return shifted > INT16_MAX ? INT16_MAX : (shifted < INT16_MIN ? INT16_MIN : (int32_t)shifted);
}

#endif /* MCU_FIXED_POINT_H */
