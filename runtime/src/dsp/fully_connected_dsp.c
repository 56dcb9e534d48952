/*
 * fully_connected_dsp.c - mcu_fully_connected_s8_dsp: int8 fully connected layer for cores
 * with the DSP extension.
 *
 *   acc[r, u] = bias[u] + sum_k W[u, k] * (X[r, k] + input_offset)       (weights_offset 0)
 *   Y[r, u]   = clamp(mbqm(acc, multiplier[u], shift[u]) + output_offset)
 *
 * One input row at a time, read in place: per four k one word of inputs widened with the
 * input offset by SXTAB16 / SXTAB16 ROR 8 (the (x0, x2) (x1, x3) halves that meet SXTB16 of a
 * weight word), two paired weight rows (mcu_runtime_dsp.h), 4 SMLAD for 8 MACs; no scratch
 * (a q15 copy of the row would save 2 instructions per 8 MACs and cost 2 * K bytes of RAM).
 * Per-tensor weights with a non-zero zero point (weights_offset != 0) are refused
 * (MCU_ERR_ARG): mcudeploy keeps those on the reference kernel.
 *
 * Access order: a row's outputs are stored while its input row is still being read (no
 * overlap is claimed for this kernel).
 */
#include "mcu_dsp_internal.h"
#include "mcu_runtime_dsp.h"

/* acc[0..1] += one input row (depth values at x) x a pair of interleaved weight rows. */
static void row_pair(const int8_t *x, int32_t depth, int32_t offset_pair, int32_t input_offset, const int8_t *w,
                     int32_t rows, int32_t acc[2]) {
    int32_t a0 = acc[0], a1 = acc[1], whole = depth & ~3;
    for (int32_t k = 0; k < whole; k += 4, w += 4 * rows) {
        int32_t in = mcu_read32(x + k);
        int32_t x02 = mcu_sxtab16(offset_pair, in), x13 = mcu_sxtab16_ror8(offset_pair, in);
        int32_t wa = mcu_read32(w);
        a0 = mcu_smlad(x13, mcu_sxtb16_ror8(wa), mcu_smlad(x02, mcu_sxtb16(wa), a0));
        if (rows == 2) {
            int32_t wb = mcu_read32(w + 4);
            a1 = mcu_smlad(x13, mcu_sxtb16_ror8(wb), mcu_smlad(x02, mcu_sxtb16(wb), a1));
        }
    }
    for (int32_t k = whole; k < depth; ++k) {   /* the zero-padded last group */
        int32_t value = x[k] + input_offset;
        a0 = (int32_t)((uint32_t)a0 + (uint32_t)(w[k - whole] * value));
        if (rows == 2) {
            a1 = (int32_t)((uint32_t)a1 + (uint32_t)(w[4 + k - whole] * value));
        }
    }
    acc[0] = a0;
    acc[1] = a1;
}

int32_t mcu_fully_connected_s8_dsp_scratch_size(const mcu_fc_params *params, const mcu_dims *in_dims,
                                                const mcu_dims *w_dims, const mcu_dims *out_dims) {
    (void)params;
    (void)in_dims;
    (void)w_dims;
    (void)out_dims;
    return 0;
}

mcu_status mcu_fully_connected_s8_dsp(const mcu_context *ctx, const mcu_fc_params *params,
                                      const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                      const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                      const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims)
        || !mcu_dims_valid(out_dims) || in == NULL || w == NULL || out == NULL || quant->multiplier == NULL
        || quant->shift == NULL || quant->weights_offset != 0 || quant->input_offset < -127
        || quant->input_offset > 128 || !mcu_activation_valid(&params->activation, MCU_INT8)) {
        return MCU_ERR_ARG;
    }
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c, units = w_dims->n;
    if (w_dims->h * w_dims->w * w_dims->c != depth || out_dims->c != units
        || out_dims->n * out_dims->h * out_dims->w != rows) {
        return MCU_ERR_ARG;
    }
    int32_t row = mcu_dsp_row_length(depth), offset_pair = mcu_dsp_pair(quant->input_offset), reach = mcu_dsp_reach(depth);
    for (int32_t r = 0; r < rows; ++r, in += depth, out += units) {
        for (int32_t u = 0; u < units; u += 2) {
            int32_t pair = u + 1 < units ? 2 : 1;
            int32_t acc[2] = {bias != NULL ? bias[u] : 0, bias != NULL && pair == 2 ? bias[u + 1] : 0};
            row_pair(in, depth, offset_pair, quant->input_offset, w + u * row, pair, acc);
            for (int32_t i = 0; i < pair; ++i) {
                mcu_dsp_scale scale = mcu_dsp_scale_of(quant->multiplier[u + i], quant->shift[u + i],
                                                       bias != NULL ? bias[u + i] : 0, reach);
                out[u + i] = mcu_dsp_output_any(acc[i], &scale, quant->output_offset, params->activation.min,
                                                params->activation.max);
            }
        }
    }
    return MCU_OK;
}
