/*
 * smooth_step.c - int8 Logistic (sigmoid) and Tanh, TFLite Micro semantics: the input
 * difference is rescaled to Q4.27 and fed to gemmlowp's fixed-point logistic / tanh.
 *
 *   d = X - input_zero_point
 *   d <= -radius -> type min (-128);  d >= radius -> type max (127);  otherwise
 *   Y = clamp(rdbpot(f(mbqm(d, multiplier, left_shift)), 31 - bits) + offset)
 * Logistic: bits 8, offset -128 (output scale 1/256); Tanh: bits 7, offset 0 (scale 1/128).
 * Spec: reference/int_kernels/activation.py.
 */
#include "mcu_internal.h"

typedef int32_t (*fixed_point_function)(int32_t a, int32_t integer_bits);

static mcu_status smooth_step(const mcu_smooth_step_quant *quant, fixed_point_function function,
                              int32_t output_bits, int32_t output_offset, const mcu_dims *in_dims,
                              const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims) || quant->input_range_radius < 1
        || quant->input_left_shift > 30) {
        return MCU_ERR_ARG;
    }
    int32_t radius = quant->input_range_radius, count = mcu_dims_count(in_dims);
    for (int32_t i = 0; i < count; ++i) {
        int32_t difference = in[i] - quant->input_zero_point;
        if (difference <= -radius) {
            out[i] = INT8_MIN;
        } else if (difference >= radius) {
            out[i] = INT8_MAX;
        } else {
            int32_t in_q4 = mcu_mbqm(difference, quant->input_multiplier, quant->input_left_shift);
            int32_t value = mcu_rdbpot(function(in_q4, 4), 31 - output_bits);
            out[i] = (int8_t)mcu_clamp_add(value, output_offset, INT8_MIN, INT8_MAX);
        }
    }
    return MCU_OK;
}

mcu_status mcu_logistic_s8(const mcu_context *ctx, const mcu_smooth_step_quant *quant,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return smooth_step(quant, mcu_fp_logistic, 8, -128, in_dims, in, out_dims, out);
}

mcu_status mcu_tanh_s8(const mcu_context *ctx, const mcu_smooth_step_quant *quant,
                       const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return smooth_step(quant, mcu_fp_tanh, 7, 0, in_dims, in, out_dims, out);
}
