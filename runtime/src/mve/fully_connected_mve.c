/*
 * fully_connected_mve.c - mcu_fully_connected_s8_mve: int8 fully connected layer for cores
 * with MVE.
 *
 *   acc[r, u] = bias'[u] + sum_k W[u, k] * X[r, k],   bias'[u] = bias[u] + input_offset * sum_k W[u, k]
 *   Y[r, u]   = clamp(mbqm(acc, multiplier[u], shift[u]) + output_offset)        (weights_offset 0)
 *
 * The conv kernel's blocks (mcu_mve_gemm.h) with rows as pixels: two input rows at a time,
 * read in place when K % 16 == 0, else copied into two scratch columns of Kp = ceil16(K)
 * bytes; 2 rows x 4 units per block (1 x 4 for a single row). Weights: quad rows; bias:
 * bias' (mcu_runtime_mve.h). weights_offset != 0 is refused (MCU_ERR_ARG).
 *
 * Access order: a pair of rows read in place stores its first units while still reading
 * them (no overlap is claimed for this kernel).
 *
 * mcu_fully_connected_s8_mve_prechecked skips the argument checks, which mcudeploy's code
 * generator makes at generation time (a 16 -> 2 layer would otherwise spend a fifth of its
 * instructions on them).
 */
#include "mcu_mve_gemm.h"
#include "mcu_runtime_mve.h"

int32_t mcu_fully_connected_s8_mve_scratch_size(const mcu_fc_params *params, const mcu_dims *in_dims,
                                                const mcu_dims *w_dims, const mcu_dims *out_dims) {
    (void)params;
    (void)w_dims;
    (void)out_dims;
    return in_dims == NULL ? 0 : MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES(in_dims->c);
}

static void copy_row(int8_t *target, const int8_t *source, int32_t depth, int32_t row) {
    for (int32_t k = 0; k < row; k += 16) {
        mcu_pred lanes = mcu_vctp8(depth - k);
        mcu_vst_s8(target + k, mcu_vld_s8_z(source + k, lanes));   /* K..Kp: zeros */
    }
}

mcu_status mcu_fully_connected_s8_mve(const mcu_context *ctx, const mcu_fc_params *params,
                                      const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                      const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                      const mcu_dims *out_dims, int8_t *out) {
    if (params == NULL || quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims)
        || !mcu_dims_valid(out_dims) || in == NULL || w == NULL || bias == NULL || out == NULL
        || quant->multiplier == NULL || quant->shift == NULL || quant->weights_offset != 0
        || !mcu_activation_valid(&params->activation, MCU_INT8)) {
        return MCU_ERR_ARG;
    }
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c, units = w_dims->n;
    if (w_dims->h * w_dims->w * w_dims->c != depth || out_dims->c != units
        || out_dims->n * out_dims->h * out_dims->w != rows) {
        return MCU_ERR_ARG;
    }
    int32_t needed = mcu_fully_connected_s8_mve_scratch_size(params, in_dims, w_dims, out_dims);
    if (needed > 0 && (ctx == NULL || ctx->buffer == NULL || ctx->size < needed)) {
        return MCU_ERR_SCRATCH;
    }
    return mcu_fully_connected_s8_mve_prechecked(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
}

mcu_status mcu_fully_connected_s8_mve_prechecked(const mcu_context *ctx, const mcu_fc_params *params,
                                                 const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                                 const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                                 const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    (void)out_dims;
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c, units = w_dims->n;
    int32_t needed = MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES(depth);
    mcu_mve_gemm_output output = {quant->multiplier, quant->shift, bias, NULL, quant->output_offset, params->activation,
                                  mcu_mve_all_right_shifts(quant->shift, units)};
    int32_t row = mcu_mve_row_length(depth);
    int8_t *columns = needed > 0 ? (int8_t *)ctx->buffer : NULL;
    mcu_mve_gemm_function gemm = mcu_mve_gemm_for(units);
    for (int32_t r = 0; r < rows; r += 2) {
        int32_t pair = r + 1 < rows;
        const int8_t *first = in + r * depth, *second = pair ? in + (r + 1) * depth : NULL;
        if (columns != NULL) {
            copy_row(columns, first, depth, row);
            if (pair) {
                copy_row(columns + row, second, depth, row);
            }
            first = columns;
            second = pair ? columns + row : NULL;
        }
        gemm(&output, first, second, w, row, units, out + r * units, pair ? out + (r + 1) * units : NULL);
    }
    return MCU_OK;
}
