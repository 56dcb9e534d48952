/*
 * conv_s16_dsp.c - mcu_conv2d_s16_dsp: 16x8 convolution (groups = 1), NHWC, for cores with
 * the DSP extension.
 *
 * Two output pixels at a time: their receptive fields, K = kH*kW*C int16 values (padding
 * taps 0), copied as two columns into the scratch (a pointwise conv reads its two input
 * rows in place), then 2x2 blocks of mcu_s16_dsp_block over pairs of output channels:
 *
 *   acc[p, o] = sum_k W[o, k] * X_p[k]                    (exact, int64)
 *   Y[p, o]   = clamp(mbqm64(acc + bias[o], multiplier[o], shift[o]))
 *
 * Weights: "s16 quad pairs" (mcu_runtime_s16.h). Out c_stride: pixel p at out + p * c_stride.
 * Access order (overlap proof): a block of two pixels copies both fields before its first
 * store; a pointwise block stores while it still reads its two rows.
 * Non-zero offsets run the reference kernel (its rows are the plain ones: mcudeploy never
 * emits such a call).
 */
#include "mcu_dsp_s16.h"
#include "mcu_runtime_s16.h"

int32_t mcu_conv2d_s16_dsp_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                        const mcu_dims *w_dims, const mcu_dims *out_dims) {
    if (params == NULL || in_dims == NULL || w_dims == NULL || out_dims == NULL
        || mcu_s16_pointwise(params, in_dims, w_dims, out_dims)) {
        return 0;
    }
    return MCU_CONV2D_S16_SCRATCH_BYTES(w_dims->h * w_dims->w * w_dims->c);
}

static void pixel_pair(const mcu_conv_params *params, const mcu_channel_quant *quant, const mcu_dims *w_dims,
                       const int8_t *w, const int64_t *bias, const int16_t *x0, const int16_t *x1, int32_t second,
                       int16_t *out0, int16_t *out1) {
    int32_t depth = w_dims->h * w_dims->w * w_dims->c, channels = w_dims->n;
    int64_t sums[4];
    for (int32_t o = 0; o < channels; o += 2) {
        int32_t pair = o + 1 < channels;
        mcu_s16_dsp_block(x0, x1, w + o * depth, depth, pair, sums);
        mcu_s16_dsp_store(sums, bias, quant, &params->activation, o, pair, second, out0, out1);
    }
}

mcu_status mcu_conv2d_s16_dsp(const mcu_context *ctx, const mcu_conv_params *params,
                              const mcu_channel_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                              const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                              const mcu_dims *out_dims, int16_t *out) {
    if (quant != NULL && (quant->input_offset != 0 || quant->output_offset != 0)) {
        return mcu_conv2d_s16(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
    }
    if (!mcu_s16_conv_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out, 0)) {
        return MCU_ERR_ARG;
    }
    int32_t pointwise = mcu_s16_pointwise(params, in_dims, w_dims, out_dims);
    int32_t depth = w_dims->h * w_dims->w * w_dims->c;
    int32_t needed = mcu_conv2d_s16_dsp_scratch_size(params, in_dims, w_dims, out_dims);
    if (needed > 0 && (ctx == NULL || ctx->buffer == NULL || ctx->size < needed)) {
        return MCU_ERR_ARG;
    }
    int16_t *column0 = NULL, *column1 = NULL;
    if (needed > 0) {
        column0 = (int16_t *)ctx->buffer;
        column1 = column0 + depth;
    }
    int32_t pixels = out_dims->h * out_dims->w, stride = mcu_pixel_stride(out_dims);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t p = 0; p < pixels; p += 2) {
            int32_t second = p + 1 < pixels, q = second ? p + 1 : p;
            const int16_t *x0, *x1;
            if (pointwise) {
                x0 = in + (n * pixels + p) * depth;
                x1 = in + (n * pixels + q) * depth;
            } else {
                mcu_s16_field(params, in_dims, w_dims, in, n, p / out_dims->w, p % out_dims->w, column0);
                mcu_s16_field(params, in_dims, w_dims, in, n, q / out_dims->w, q % out_dims->w, column1);
                x0 = column0;
                x1 = column1;
            }
            pixel_pair(params, quant, w_dims, w, bias, x0, x1, second, out + (n * pixels + p) * stride,
                       out + (n * pixels + q) * stride);
        }
    }
    return MCU_OK;
}
