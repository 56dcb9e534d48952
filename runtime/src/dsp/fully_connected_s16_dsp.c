/*
 * fully_connected_s16_dsp.c - mcu_fully_connected_s16_dsp: 16x8 fully connected for cores
 * with the DSP extension: the input rows read in place, 2 rows x 2 units per block
 * (mcu_s16_dsp_block):
 *
 *   acc[r, u] = sum_k W[u, k] * X[r, k]                   (exact, int64)
 *   Y[r, u]   = clamp(mbqm64(acc + bias[u], multiplier[u], shift[u]))
 *
 * Weights: "s16 quad pairs" of the [N, K] rows (mcu_runtime_s16.h). No scratch. Non-zero offsets run
 * the reference kernel.
 */
#include "mcu_dsp_s16.h"
#include "mcu_runtime_s16.h"

mcu_status mcu_fully_connected_s16_dsp(const mcu_context *ctx, const mcu_fc_params *params,
                                       const mcu_fc_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                                       const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                                       const mcu_dims *out_dims, int16_t *out) {
    if (quant != NULL && (quant->input_offset != 0 || quant->weights_offset != 0 || quant->output_offset != 0)) {
        return mcu_fully_connected_s16(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
    }
    if (!mcu_s16_fc_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c, units = w_dims->n;
    mcu_channel_quant channel = {0, 0, quant->multiplier, quant->shift};
    int64_t sums[4];
    for (int32_t r = 0; r < rows; r += 2) {
        int32_t second = r + 1 < rows, s = second ? r + 1 : r;
        for (int32_t u = 0; u < units; u += 2) {
            int32_t pair = u + 1 < units;
            mcu_s16_dsp_block(in + r * depth, in + s * depth, w + u * depth, depth, pair, sums);
            mcu_s16_dsp_store(sums, bias, &channel, &params->activation, u, pair, second, out + r * units,
                              out + s * units);
        }
    }
    return MCU_OK;
}
