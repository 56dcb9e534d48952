/*
 * conv.c - 2-D convolution, grouped and depthwise, NHWC, int8 and 16x8.
 *
 *   acc[n, y, x, o] = sum_{i, j, c} W[o, i, j, c] * (X[n, y*sh + i*dh - pad_top,
 *                                                     x*sw + j*dw - pad_left, g*Cg + c] + input_offset)
 *   (taps outside the input are skipped: padding reads the input zero point)
 *   Y = clamp(requantize(acc + bias[o], multiplier[o], shift[o]) + output_offset)
 *
 * with g = o / (O / groups), Cg = C / groups. Depthwise convolution is the grouped case
 * Cg = 1, groups = C, O = C * M (output channel c*M + m reads input channel c), so both
 * entry points share one core. Spec: reference/int_kernels/conv.py. Out c_stride: output
 * pixel p starts at element p * c_stride of `out` (mcu_runtime.h).
 */
#include "mcu_internal.h"

typedef struct {
    int32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
} conv_geometry;

static int64_t dot_at(const conv_geometry *geometry, const mcu_dims *in_dims, const void *in,
                      mcu_element_type in_type, int32_t input_offset, const mcu_dims *w_dims,
                      const int8_t *w, int32_t batch, int32_t out_y, int32_t out_x, int32_t out_c,
                      int32_t first_channel) {
    int64_t acc = 0;
    int32_t in_y0 = out_y * geometry->stride_h - geometry->pad_top;
    int32_t in_x0 = out_x * geometry->stride_w - geometry->pad_left;
    for (int32_t i = 0; i < w_dims->h; ++i) {
        int32_t in_y = in_y0 + i * geometry->dilation_h;
        if (in_y < 0 || in_y >= in_dims->h) {
            continue;
        }
        for (int32_t j = 0; j < w_dims->w; ++j) {
            int32_t in_x = in_x0 + j * geometry->dilation_w;
            if (in_x < 0 || in_x >= in_dims->w) {
                continue;
            }
            int32_t in_base = ((batch * in_dims->h + in_y) * in_dims->w + in_x) * in_dims->c + first_channel;
            const int8_t *taps = w + ((out_c * w_dims->h + i) * w_dims->w + j) * w_dims->c;
            for (int32_t c = 0; c < w_dims->c; ++c) {
                acc += (int64_t)taps[c] * (mcu_load(in, in_base + c, in_type) + input_offset);
            }
        }
    }
    return acc;
}

static mcu_status conv_core(const conv_geometry *geometry, const mcu_accumulator_output *output,
                            int32_t input_offset, const mcu_dims *in_dims, const void *in,
                            mcu_element_type type, const mcu_dims *w_dims, const int8_t *w,
                            const mcu_dims *out_dims, void *out) {
    if (!mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims) || !mcu_out_dims_valid(out_dims) || in == NULL
        || w == NULL || out == NULL || output->multiplier == NULL || output->shift == NULL
        || geometry->stride_h < 1 || geometry->stride_w < 1 || geometry->dilation_h < 1
        || geometry->dilation_w < 1 || geometry->pad_top < 0 || geometry->pad_left < 0
        || in_dims->c % w_dims->c != 0 || w_dims->n != out_dims->c || out_dims->n != in_dims->n
        || !mcu_activation_valid(&output->activation, type)) {
        return MCU_ERR_ARG;
    }
    int32_t groups = in_dims->c / w_dims->c;
    if (out_dims->c % groups != 0) {
        return MCU_ERR_ARG;
    }
    int32_t per_group = out_dims->c / groups, pixel_stride = mcu_pixel_stride(out_dims);
    int32_t pixel = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, pixel += pixel_stride) {
                for (int32_t o = 0; o < out_dims->c; ++o) {
                    int32_t first_channel = (o / per_group) * w_dims->c;
                    int64_t acc = dot_at(geometry, in_dims, in, type, input_offset, w_dims, w, n, y, x,
                                         o, first_channel);
                    mcu_store(out, pixel + o, type, mcu_output_from_accumulator(output, acc, o));
                }
            }
        }
    }
    return MCU_OK;
}

static conv_geometry geometry_of_conv(const mcu_conv_params *params) {
    conv_geometry geometry = {params->stride_h, params->stride_w, params->pad_top,
                              params->pad_left, params->dilation_h, params->dilation_w};
    return geometry;
}

static conv_geometry geometry_of_depthwise(const mcu_depthwise_params *params) {
    conv_geometry geometry = {params->stride_h, params->stride_w, params->pad_top,
                              params->pad_left, params->dilation_h, params->dilation_w};
    return geometry;
}

static mcu_accumulator_output output_of(const mcu_channel_quant *quant, mcu_activation activation,
                                        const int32_t *bias32, const int64_t *bias64, int32_t wide) {
    mcu_accumulator_output output = {quant->multiplier, quant->shift, bias32, bias64, wide,
                                      quant->output_offset, activation};
    return output;
}

mcu_status mcu_conv2d_s8(const mcu_context *ctx, const mcu_conv_params *params,
                         const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                         const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                         const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    conv_geometry geometry = geometry_of_conv(params);
    mcu_accumulator_output output = output_of(quant, params->activation, bias, NULL, 0);
    return conv_core(&geometry, &output, quant->input_offset, in_dims, in, MCU_INT8, w_dims, w,
                     out_dims, out);
}

mcu_status mcu_conv2d_s16(const mcu_context *ctx, const mcu_conv_params *params,
                          const mcu_channel_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                          const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                          const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    conv_geometry geometry = geometry_of_conv(params);
    mcu_accumulator_output output = output_of(quant, params->activation, NULL, bias, 1);
    return conv_core(&geometry, &output, quant->input_offset, in_dims, in, MCU_INT16, w_dims, w,
                     out_dims, out);
}

static int32_t depthwise_shape_valid(const mcu_depthwise_params *params, const mcu_dims *in_dims,
                                     const mcu_dims *w_dims) {
    return mcu_dims_valid(in_dims) && mcu_dims_valid(w_dims) && w_dims->c == 1
           && params->depth_multiplier >= 1 && w_dims->n == in_dims->c * params->depth_multiplier;
}

mcu_status mcu_depthwise_conv2d_s8(const mcu_context *ctx, const mcu_depthwise_params *params,
                                   const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                   const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL || !depthwise_shape_valid(params, in_dims, w_dims)) {
        return MCU_ERR_ARG;
    }
    conv_geometry geometry = geometry_of_depthwise(params);
    mcu_accumulator_output output = output_of(quant, params->activation, bias, NULL, 0);
    return conv_core(&geometry, &output, quant->input_offset, in_dims, in, MCU_INT8, w_dims, w,
                     out_dims, out);
}

mcu_status mcu_depthwise_conv2d_s16(const mcu_context *ctx, const mcu_depthwise_params *params,
                                    const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                    const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                    const int64_t *bias, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    if (params == NULL || quant == NULL || !depthwise_shape_valid(params, in_dims, w_dims)) {
        return MCU_ERR_ARG;
    }
    conv_geometry geometry = geometry_of_depthwise(params);
    mcu_accumulator_output output = output_of(quant, params->activation, NULL, bias, 1);
    return conv_core(&geometry, &output, quant->input_offset, in_dims, in, MCU_INT16, w_dims, w,
                     out_dims, out);
}
