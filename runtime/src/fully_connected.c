/*
 * fully_connected.c - TFLite FULLY_CONNECTED, int8 and 16x8.
 *
 *   acc[r, u] = sum_k (W[u, k] + weights_offset) * (X[r, k] + input_offset)
 *   Y[r, u]   = clamp(requantize(acc + bias[u], multiplier[u], shift[u]) + output_offset)
 *
 * rows r = in n*h*w, depth k = in c, units u = w n; int32 requantization for s8, the
 * int64 form for s16. Spec: reference/int_kernels/matmul.py.
 */
#include "mcu_internal.h"

static mcu_status fully_connected_core(const mcu_fc_quant *quant, const mcu_accumulator_output *output,
                                       const mcu_dims *in_dims, const void *in, mcu_element_type type,
                                       const mcu_dims *w_dims, const int8_t *w, const mcu_dims *out_dims,
                                       void *out) {
    if (!mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims) || !mcu_dims_valid(out_dims) || in == NULL
        || w == NULL || out == NULL || quant->multiplier == NULL || quant->shift == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t rows = in_dims->n * in_dims->h * in_dims->w;
    int32_t depth = in_dims->c, units = w_dims->n;
    if (w_dims->h * w_dims->w * w_dims->c != depth || out_dims->c != units
        || out_dims->n * out_dims->h * out_dims->w != rows || !mcu_activation_valid(&output->activation, type)) {
        return MCU_ERR_ARG;
    }
    for (int32_t r = 0; r < rows; ++r) {
        for (int32_t u = 0; u < units; ++u) {
            const int8_t *weights = w + u * depth;
            int64_t acc = 0;
            for (int32_t k = 0; k < depth; ++k) {
                int32_t value = mcu_load(in, r * depth + k, type) + quant->input_offset;
                acc += (int64_t)(weights[k] + quant->weights_offset) * value;
            }
            mcu_store(out, r * units + u, type, mcu_output_from_accumulator(output, acc, u));
        }
    }
    return MCU_OK;
}

mcu_status mcu_fully_connected_s8(const mcu_context *ctx, const mcu_fc_params *params,
                                  const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                  const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                  const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    mcu_accumulator_output output = {quant->multiplier, quant->shift, bias, NULL, 0,
                                     quant->output_offset, params->activation};
    return fully_connected_core(quant, &output, in_dims, in, MCU_INT8, w_dims, w, out_dims, out);
}

mcu_status mcu_fully_connected_s16(const mcu_context *ctx, const mcu_fc_params *params,
                                   const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                   const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int64_t *bias, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    mcu_accumulator_output output = {quant->multiplier, quant->shift, NULL, bias, 1,
                                     quant->output_offset, params->activation};
    return fully_connected_core(quant, &output, in_dims, in, MCU_INT16, w_dims, w, out_dims, out);
}
