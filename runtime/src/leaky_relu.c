/*
 * leaky_relu.c - LeakyRelu, int8 and int16 (TFLite semantics):
 *
 *   d = X - zp_in;  Y = clamp(zp_out + mbqm(d, d >= 0 ? identity : alpha), type range)
 * Spec: reference/int_kernels/activation.py (leaky_relu).
 */
#include "mcu_internal.h"

static mcu_status leaky_relu_core(const mcu_leaky_relu_quant *quant, const mcu_dims *in_dims, const void *in,
                                  const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims)) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(in_dims), low = mcu_type_min(type), high = mcu_type_max(type);
    for (int32_t i = 0; i < count; ++i) {
        int32_t difference = mcu_load(in, i, type) - quant->input_zero_point;
        int32_t scaled = difference >= 0
                             ? mcu_mbqm(difference, quant->identity_multiplier, quant->identity_shift)
                             : mcu_mbqm(difference, quant->alpha_multiplier, quant->alpha_shift);
        mcu_store(out, i, type, mcu_clamp_add(scaled, quant->output_zero_point, low, high));
    }
    return MCU_OK;
}

mcu_status mcu_leaky_relu_s8(const mcu_context *ctx, const mcu_leaky_relu_quant *quant,
                             const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return leaky_relu_core(quant, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_leaky_relu_s16(const mcu_context *ctx, const mcu_leaky_relu_quant *quant,
                              const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                              int16_t *out) {
    (void)ctx;
    return leaky_relu_core(quant, in_dims, in, out_dims, out, MCU_INT16);
}
