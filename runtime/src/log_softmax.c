/*
 * log_softmax.c - TFLite LogSoftmax over the last axis (c), int8 in and out (output scale
 * 16/256, zero point 127), gemmlowp fixed point as TFLite's LogSoftmaxQuantized. Per row:
 *
 *   d    = X - max(X)                                              (<= 0)
 *   q5   = mbqm(d, input_multiplier, input_left_shift)             (Q5.26)
 *   sum  = wrap32(sum over d >= diff_min of rdbpot(exp_on_negative_values(q5, 5), 12))
 *   L    = log_x_for_x_greater_than_or_equal_to_1(sum)             (Q12.19 -> Q5.26)
 *   cut  = max(diff_min - 1, mbqm(L + INT32_MIN, reverse_scaling_divisor, reverse_scaling_shift))
 *   Y    = clamp(rdbpot(q5 - L, 22) + 127, -128, 127) where d > cut, else -128
 * Spec: reference/int_kernels/log_softmax.py.
 */
#include "mcu_internal.h"

#define LOG_2 1488522236
#define SQRT_SQRT_HALF 1805811301
#define SQRT_HALF 1518500250
#define ONE_QUARTER 536870912
#define ALPHA_N 117049297
#define ALPHA_D 127690142
#define ALPHA_I 1057819769
#define ALPHA_F 638450708
#define SUM_INTEGER_BITS 12
#define ACCUM_INTEGER_BITS 6 /* output integer bits (5) + 1 */

static int32_t saturating_add(int32_t a, int32_t b) {
    int64_t sum = (int64_t)a + b;
    return sum > INT32_MAX ? INT32_MAX : (sum < INT32_MIN ? INT32_MIN : (int32_t)sum);
}

static int32_t rounding_half_sum(int32_t a, int32_t b) {
    int64_t total = (int64_t)a + b;
    return (int32_t)((total + (total >= 0 ? 1 : -1)) / 2);
}

/* TFLite log_x_for_x_greater_than_or_equal_to_1_impl<5, 12>: ln z for Q12.19 z >= 1, Q5.26. */
static int32_t log_of_sum(int32_t z) {
    int32_t quarter = mcu_rdbpot(ONE_QUARTER, ACCUM_INTEGER_BITS);
    int32_t headroom_a = mcu_count_leading_zeros((uint32_t)z);
    int32_t r_a = mcu_srmbpot(mcu_srdhm(mcu_srmbpot(z, headroom_a - 1), SQRT_HALF), 1);
    int32_t power_a = saturating_add(mcu_srmbpot(SUM_INTEGER_BITS - headroom_a, 31 - ACCUM_INTEGER_BITS), quarter);
    int32_t headroom_b = mcu_count_leading_zeros((uint32_t)mcu_srdhm(z, SQRT_HALF)) - 1;
    int32_t r_b = mcu_srmbpot(z, headroom_b);
    int32_t power_b = saturating_add(mcu_srmbpot(SUM_INTEGER_BITS - headroom_b, 31 - ACCUM_INTEGER_BITS), -quarter);
    int32_t r = r_a < r_b ? r_a : r_b, power = power_a > power_b ? power_a : power_b;
    int32_t p = rounding_half_sum(r, SQRT_SQRT_HALF);
    int32_t q = mcu_wrap_sub(r, SQRT_SQRT_HALF);
    q = mcu_wrap_add(q, q);
    int32_t square = mcu_srdhm(q, q);
    int32_t numerator = mcu_wrap_add(mcu_srdhm(q, r), mcu_srdhm(mcu_srdhm(q, square), ALPHA_N));
    int32_t denominator_minus_one = mcu_wrap_add(
        mcu_srdhm(p, mcu_wrap_add(mcu_wrap_add(ALPHA_I, q), mcu_srdhm(ALPHA_D, square))), mcu_srdhm(ALPHA_F, q));
    int32_t reciprocal = mcu_fp_one_over_one_plus_x(denominator_minus_one);
    int32_t scaled = mcu_rdbpot(numerator, ACCUM_INTEGER_BITS);
    int32_t total = mcu_wrap_add(mcu_srdhm(power, LOG_2), mcu_srdhm(scaled, reciprocal));
    return mcu_srmbpot(total, 1);
}

static void log_softmax_row(const mcu_log_softmax_quant *quant, const int8_t *row, int32_t depth, int8_t *out) {
    int32_t maximum = INT8_MIN, total = 0;
    for (int32_t i = 0; i < depth; ++i) {
        maximum = row[i] > maximum ? row[i] : maximum;
    }
    for (int32_t i = 0; i < depth; ++i) {
        int32_t difference = row[i] - maximum;
        if (difference >= quant->diff_min) {
            int32_t q5 = mcu_mbqm(difference, quant->input_multiplier, quant->input_left_shift);
            total = mcu_wrap_add(total, mcu_rdbpot(mcu_fp_exp_on_negative_values(q5, 5), SUM_INTEGER_BITS));
        }
    }
    int32_t log_sum = log_of_sum(total);
    int32_t scaled_cut = mcu_mbqm(mcu_wrap_add(log_sum, INT32_MIN), quant->reverse_scaling_divisor,
                                  quant->reverse_scaling_shift);
    int32_t cut = quant->diff_min - 1 > scaled_cut ? quant->diff_min - 1 : scaled_cut;
    for (int32_t i = 0; i < depth; ++i) {
        int32_t difference = row[i] - maximum, value = INT8_MIN;
        if (difference > cut) {
            int32_t q5 = mcu_mbqm(difference, quant->input_multiplier, quant->input_left_shift);
            value = mcu_clamp_add(mcu_rdbpot(mcu_wrap_sub(q5, log_sum), 22), 127, INT8_MIN, INT8_MAX);
        }
        out[i] = (int8_t)value;
    }
}

mcu_status mcu_log_softmax_s8(const mcu_context *ctx, const mcu_log_softmax_quant *quant, const mcu_dims *in_dims,
                              const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims) || quant->input_left_shift < 0 || quant->input_left_shift > 31
        || quant->reverse_scaling_shift > 0 || quant->diff_min > 0) {
        return MCU_ERR_ARG;
    }
    int32_t depth = in_dims->c, rows = mcu_dims_count(in_dims) / depth;
    for (int32_t r = 0; r < rows; ++r) {
        log_softmax_row(quant, in + r * depth, depth, out + r * depth);
    }
    return MCU_OK;
}
