/*
 * conv_accumulate.c - the input-channel split of one int8 Conv: partial convolutions over
 * slices of the input channels summed into an int32 accumulator, then one requantization.
 *
 *   acc_out[n, y, x, o] = wrap32(bias[o] + acc_in[n, y, x, o] + sum_{i, j, c < Cg} W[o, i, j, c]
 *                         * (X[n, y*sh + i*dh - pad_top, x*sw + j*dw - pad_left, begin + c] + input_offset))
 *   Y[n, y, x, o]       = clamp(mbqm(acc[n, y, x, o], multiplier[o], shift[o]) + output_offset)
 *
 * The dot product is exact in int64 and wrapped to int32 like mcu_conv2d_s8's accumulator;
 * the running sum is added as uint32 (defined wrap-around, no signed overflow), so the last
 * accumulator equals the unsplit wrap32(bias + sum) whatever the groups. Loops n, y, x, o:
 * acc_in[index] is read just before acc_out[index] is written (in place allowed).
 * Spec: reference/int_kernels/accumulate.py.
 */
#include "mcu_internal.h"

static int64_t slice_dot(const mcu_conv_accumulate_params *params, const mcu_dims *in_dims, const int8_t *in,
                         int32_t input_offset, const mcu_dims *w_dims, const int8_t *w, int32_t batch,
                         int32_t out_y, int32_t out_x, int32_t out_c) {
    int64_t acc = 0;
    int32_t in_y0 = out_y * params->stride_h - params->pad_top;
    int32_t in_x0 = out_x * params->stride_w - params->pad_left;
    for (int32_t i = 0; i < w_dims->h; ++i) {
        int32_t in_y = in_y0 + i * params->dilation_h;
        if (in_y < 0 || in_y >= in_dims->h) {
            continue;
        }
        for (int32_t j = 0; j < w_dims->w; ++j) {
            int32_t in_x = in_x0 + j * params->dilation_w;
            if (in_x < 0 || in_x >= in_dims->w) {
                continue;
            }
            const int8_t *pixel = in + ((batch * in_dims->h + in_y) * in_dims->w + in_x) * in_dims->c
                                  + params->channel_begin;
            const int8_t *taps = w + ((out_c * w_dims->h + i) * w_dims->w + j) * w_dims->c;
            for (int32_t c = 0; c < w_dims->c; ++c) {
                acc += (int64_t)taps[c] * (pixel[c] + input_offset);
            }
        }
    }
    return acc;
}

static int32_t accumulate_args_valid(const mcu_conv_accumulate_params *params, const mcu_dims *in_dims,
                                     const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                     const mcu_dims *out_dims, const int32_t *acc_out) {
    return mcu_dims_valid(in_dims) && mcu_dims_valid(w_dims) && mcu_dims_valid(out_dims) && in != NULL
           && w != NULL && acc_out != NULL && params->stride_h >= 1 && params->stride_w >= 1
           && params->dilation_h >= 1 && params->dilation_w >= 1 && params->pad_top >= 0
           && params->pad_left >= 0 && params->channel_begin >= 0
           && params->channel_begin + w_dims->c <= in_dims->c && w_dims->n == out_dims->c
           && out_dims->n == in_dims->n;
}

mcu_status mcu_conv_accumulate_s8_s32(const mcu_context *ctx, const mcu_conv_accumulate_params *params,
                                      const mcu_accumulate_quant *quant, const mcu_dims *in_dims,
                                      const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                      const int32_t *bias, const int32_t *acc_in, const mcu_dims *out_dims,
                                      int32_t *acc_out) {
    (void)ctx;
    if (params == NULL || quant == NULL
        || !accumulate_args_valid(params, in_dims, in, w_dims, w, out_dims, acc_out)) {
        return MCU_ERR_ARG;
    }
    int32_t index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t o = 0; o < out_dims->c; ++o) {
                    int64_t dot = slice_dot(params, in_dims, in, quant->input_offset, w_dims, w, n, y, x, o);
                    uint32_t sum = (uint32_t)(uint64_t)dot;
                    sum += bias != NULL ? (uint32_t)bias[o] : 0u;
                    sum += acc_in != NULL ? (uint32_t)acc_in[index] : 0u;
                    acc_out[index++] = (int32_t)sum;
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_requantize_accumulator_s32_s8(const mcu_context *ctx, const mcu_accumulator_params *params,
                                             const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                             const int32_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL || quant->multiplier == NULL || quant->shift == NULL || in == NULL
        || out == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims)
        || !mcu_dims_equal(in_dims, out_dims)
        || !mcu_activation_valid(&params->activation, MCU_INT8)) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(in_dims);
    for (int32_t index = 0; index < count; ++index) {
        int32_t channel = index % in_dims->c;
        int32_t scaled = mcu_mbqm(in[index], quant->multiplier[channel], quant->shift[channel]);
        out[index] = (int8_t)mcu_clamp_add(scaled, quant->output_offset, params->activation.min,
                                           params->activation.max);
    }
    return MCU_OK;
}
