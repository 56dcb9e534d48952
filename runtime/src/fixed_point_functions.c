/*
 * fixed_point_functions.c - gemmlowp's fixed-point transcendental functions on raw int32
 * values of a Q(integer_bits).(31 - integer_bits) format, used by Softmax, Logistic and
 * Tanh. Spec (formulas and constants): arithmetic/fixed_point.py.
 *
 *   exp_on_negative_values(a): exp of (a mod 1/4) by a Taylor series around -1/8, times
 *                              exp(-2^k) for every set bit k of the rest
 *   one_over_one_plus_x(a):    1 / (1 + a) by three Newton-Raphson steps
 *   logistic(a) = 1 / (1 + exp(-|a|)) (mirrored for a < 0);  tanh via (1 - e^2n)/(1 + e^2n)
 */
#include "mcu_internal.h"

static int32_t exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
    const int32_t constant_term = 1895147668; /* exp(-1/8) in Q0.31 */
    const int32_t one_third = 715827883;      /* 1/3 in Q0.31 */
    int32_t x = mcu_wrap_add(a, 1 << 28);
    int32_t x2 = mcu_srdhm(x, x);
    int32_t x3 = mcu_srdhm(x2, x);
    int32_t x4 = mcu_srdhm(x2, x2);
    int32_t x4_over_4 = mcu_rdbpot(x4, 2);
    int32_t polynomial = mcu_rdbpot(
        mcu_wrap_add(mcu_srdhm(mcu_wrap_add(x4_over_4, x3), one_third), x2), 1);
    return mcu_wrap_add(constant_term, mcu_srdhm(constant_term, mcu_wrap_add(x, polynomial)));
}

int32_t mcu_fp_exp_on_negative_values(int32_t a, int32_t integer_bits) {
    static const int32_t barrel_multiplier[7] = {1672461947, 1302514674, 790015084, 290630308,
                                                 39332535,   720401,     242}; /* exp(-2^k), k = -2..4 */
    int32_t fractional_bits = 31 - integer_bits;
    int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    int32_t a_mod_quarter_minus_quarter = mcu_wrap_sub(a & (one_quarter - 1), one_quarter);
    int32_t result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        mcu_srmbpot(a_mod_quarter_minus_quarter, integer_bits));
    int32_t remainder = mcu_wrap_sub(a_mod_quarter_minus_quarter, a);
    for (int32_t k = 0; k < 7; ++k) {
        int32_t exponent = k - 2;
        if (integer_bits > exponent) {
            uint32_t bit = (uint32_t)1 << (fractional_bits + exponent);
            if (((uint32_t)remainder & bit) != 0) {
                result = mcu_srdhm(result, barrel_multiplier[k]);
            }
        }
    }
    if (integer_bits > 5 && a < -((int32_t)1 << (36 - integer_bits))) {
        result = 0;
    }
    return a == 0 ? INT32_MAX : result;
}

/* Q2.29 reciprocal of a Q0.31 half_denominator in [1/2, 1). */
static int32_t newton_reciprocal_f2(int32_t half_denominator) {
    const int32_t one_f2 = 1 << 29;
    int32_t x = mcu_wrap_add(1515870810, mcu_srdhm(half_denominator, -1010580540));
    for (int32_t step = 0; step < 3; ++step) {
        int32_t one_minus = mcu_wrap_sub(one_f2, mcu_srdhm(half_denominator, x));
        x = mcu_wrap_add(x, mcu_srmbpot(mcu_srdhm(x, one_minus), 2));
    }
    return x;
}

/* gemmlowp RoundingHalfSum: trunc((a + b + sign(a + b)) / 2), sign(0) = +1. */
static int32_t rounding_half_sum(int32_t a, int32_t b) {
    int64_t total = (int64_t)a + b;
    return (int32_t)((total + (total >= 0 ? 1 : -1)) / 2);
}

int32_t mcu_fp_one_over_one_plus_x(int32_t a) {
    return mcu_srmbpot(newton_reciprocal_f2(rounding_half_sum(a, INT32_MAX)), 1);
}

static int32_t one_minus_x_over_one_plus_x(int32_t a) {
    int32_t x = newton_reciprocal_f2(rounding_half_sum(a, INT32_MAX));
    return mcu_srmbpot(mcu_wrap_sub(x, 1 << 29), 2);
}

int32_t mcu_fp_logistic(int32_t a, int32_t integer_bits) {
    if (a == 0) {
        return 1 << 30;
    }
    int32_t absolute = a > 0 ? a : mcu_wrap_sub(0, a);
    int32_t if_positive = mcu_fp_one_over_one_plus_x(
        mcu_fp_exp_on_negative_values(mcu_wrap_sub(0, absolute), integer_bits));
    return a > 0 ? if_positive : mcu_wrap_sub(INT32_MAX, if_positive);
}

int32_t mcu_fp_tanh(int32_t a, int32_t integer_bits) {
    if (a == 0) {
        return 0;
    }
    int32_t negative_part = a < 0 ? a : mcu_wrap_sub(0, a);
    int32_t t = one_minus_x_over_one_plus_x(mcu_fp_exp_on_negative_values(negative_part, integer_bits + 1));
    return a < 0 ? mcu_wrap_sub(0, t) : t;
}

int32_t mcu_fp_get_reciprocal(int32_t x, int32_t x_integer_digits, int32_t *num_bits_over_unit) {
    int32_t headroom_plus_one = 0;
    uint32_t bits = (uint32_t)x;
    while (headroom_plus_one < 32 && (bits & 0x80000000u) == 0) {
        bits <<= 1;
        headroom_plus_one += 1;
    }
    *num_bits_over_unit = x_integer_digits - headroom_plus_one;
    int32_t shifted_minus_one = (int32_t)(bits - 0x80000000u);
    return mcu_fp_one_over_one_plus_x(shifted_minus_one);
}
