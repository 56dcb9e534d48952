/*
 * hard_swish.c - int8 HardSwish, x * relu6(x + 3) / 6, in TFLite's int16 fixed point:
 *
 *   hires   = wrap16((X - zp_in) * 128)                        (scale s_in / 128)
 *   pre_out = srdhm16(hires, output_multiplier)
 *   reluish = hires rescaled by the reluish multiplier to Q0.15 "x / 3" (saturating),
 *             then (reluish + 2^15) >> 1                       ([0, 1] in Q0.15)
 *   Y       = clamp(wrap16(rdbpot(sdhm16(reluish, pre_out), -output_exponent) + zp_out))
 * Spec: reference/int_kernels/activation.py (hard_swish).
 */
#include "mcu_internal.h"

static int32_t reluish_of(const mcu_hard_swish_quant *quant, int32_t hires) {
    int32_t exponent = quant->reluish_multiplier_exponent;
    int32_t reluish = hires;
    if (exponent > 0) {
        reluish = mcu_saturating_left_shift16(reluish, exponent - 1);
    }
    reluish = mcu_srdhm16(reluish, quant->reluish_multiplier_fixedpoint_int16);
    if (exponent > 0) {
        reluish = mcu_saturating_left_shift16(reluish, 1);
    }
    if (exponent < 0) {
        reluish = mcu_rdbpot(reluish, -exponent);
    }
    return (reluish + (1 << 15)) >> 1;
}

mcu_status mcu_hard_swish_s8(const mcu_context *ctx, const mcu_hard_swish_quant *quant,
                             const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims) || quant->output_multiplier_exponent > 0
        || quant->reluish_multiplier_exponent > 15) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(in_dims);
    for (int32_t i = 0; i < count; ++i) {
        int32_t hires = mcu_wrap16((in[i] - quant->input_zero_point) * 128);
        int32_t preshift_output = mcu_srdhm16(hires, quant->output_multiplier_fixedpoint_int16);
        int32_t output = mcu_sdhm16(reluish_of(quant, hires), preshift_output);
        output = mcu_rdbpot(output, -quant->output_multiplier_exponent);
        output = mcu_wrap16(output + quant->output_zero_point);
        out[i] = (int8_t)mcu_clamp(output, INT8_MIN, INT8_MAX);
    }
    return MCU_OK;
}
