/*
 * mcu_s16_variants.h - helpers shared by the 16x8 kernel variants (int16 activations, int8
 * weights: dsp/ *_s16_dsp.c, mve/ *_s16_mve.c; internal header): argument checks, the int16
 * receptive field (im2col), and TFLite's 16x8 output stage.
 *
 * 16x8 (TFLite): zero points 0 (input_offset = output_offset = 0; other offsets run the
 * reference kernel), int64 bias, int64 accumulator, reduced-multiplier requantization:
 *
 *   Y = clamp(mbqm64(acc + bias64[o], multiplier[o], shift[o]), min, max)
 *
 * Exact int32 partial sums: |x * w| <= 32768 * 128 = 2^22, so a sum of at most
 * MCU_S16_CHUNK = 504 products stays below 2^31 (504 * 2^22 = 2113929216). The variants sum
 * chunks of <= 504 products in int32 (SMLAD / VMLADAVA) and the chunks in int64: the same
 * int64 accumulator as the reference for every K.
 */
#ifndef MCU_S16_VARIANTS_H
#define MCU_S16_VARIANTS_H

#include <string.h>

#include "mcu_variants.h"

#define MCU_S16_CHUNK 504   /* products per exact int32 partial sum (a multiple of 8) */

/* The output stage of one accumulator of output channel o (offset 0). */
static inline int16_t mcu_s16_output(int64_t acc, const int64_t *bias, const mcu_channel_quant *quant, int32_t o,
                                     const mcu_activation *activation) {
    if (bias != NULL) {
        acc += bias[o];
    }
    int32_t scaled = mcu_mbqm64(acc, quant->multiplier[o], quant->shift[o]);
    return (int16_t)mcu_clamp_add(scaled, 0, activation->min, activation->max);
}

/* Geometry, pointers and ranges of a 16x8 conv (groups = 1) or depthwise one (`depthwise`:
 * multiplier 1, w_dims = {C, kH, kW, 1}), zero offsets. */
static inline int32_t mcu_s16_conv_arguments_valid(const mcu_conv_params *p, const mcu_channel_quant *quant,
                                                   const mcu_dims *in_dims, const int16_t *in,
                                                   const mcu_dims *w_dims, const int8_t *w,
                                                   const mcu_dims *out_dims, const int16_t *out,
                                                   int32_t depthwise) {
    int32_t channels_match = depthwise ? w_dims != NULL && in_dims != NULL && out_dims != NULL && w_dims->c == 1
                                             && w_dims->n == in_dims->c && out_dims->c == in_dims->c
                                       : w_dims != NULL && in_dims != NULL && out_dims != NULL
                                             && in_dims->c == w_dims->c && w_dims->n == out_dims->c;
    return p != NULL && quant != NULL && mcu_dims_valid(in_dims) && mcu_dims_valid(w_dims)
           && mcu_out_dims_valid(out_dims) && in != NULL && w != NULL && out != NULL && quant->multiplier != NULL
           && quant->shift != NULL && p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1
           && p->dilation_w >= 1 && p->pad_top >= 0 && p->pad_left >= 0 && channels_match
           && out_dims->n == in_dims->n && quant->input_offset == 0 && quant->output_offset == 0
           && mcu_activation_valid(&p->activation, MCU_INT16);
}

/* A pointwise conv (1x1, stride 1, no padding, same extent): its input rows are its columns. */
static inline int32_t mcu_s16_pointwise(const mcu_conv_params *p, const mcu_dims *in_dims, const mcu_dims *w_dims,
                                        const mcu_dims *out_dims) {
    return w_dims->h == 1 && w_dims->w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0
           && p->pad_left == 0 && in_dims->h == out_dims->h && in_dims->w == out_dims->w;
}

/* The receptive field of output pixel (batch, y, x): K = kH*kW*C int16 values in the
 * weights' (i, j, c) order, padding taps 0 (the zero point). */
static inline void mcu_s16_field(const mcu_conv_params *p, const mcu_dims *in_dims, const mcu_dims *w_dims,
                                 const int16_t *in, int32_t batch, int32_t y, int32_t x, int16_t *column) {
    int32_t channels = in_dims->c;
    size_t tap_bytes = (size_t)channels * sizeof(int16_t);
    for (int32_t i = 0; i < w_dims->h; ++i) {
        int32_t in_y = y * p->stride_h - p->pad_top + i * p->dilation_h;
        for (int32_t j = 0; j < w_dims->w; ++j, column += channels) {
            int32_t in_x = x * p->stride_w - p->pad_left + j * p->dilation_w;
            if (in_y < 0 || in_y >= in_dims->h || in_x < 0 || in_x >= in_dims->w) {
                memset(column, 0, tap_bytes);
            } else {
                memcpy(column, in + ((batch * in_dims->h + in_y) * in_dims->w + in_x) * channels, tap_bytes);
            }
        }
    }
}

/* Fully connected shapes: rows = n*h*w of the input, depth = its c, units = w n. */
static inline int32_t mcu_s16_fc_arguments_valid(const mcu_fc_params *params, const mcu_fc_quant *quant,
                                                 const mcu_dims *in_dims, const int16_t *in,
                                                 const mcu_dims *w_dims, const int8_t *w,
                                                 const mcu_dims *out_dims, const int16_t *out) {
    return params != NULL && quant != NULL && mcu_dims_valid(in_dims) && mcu_dims_valid(w_dims)
           && mcu_dims_valid(out_dims) && in != NULL && w != NULL && out != NULL && quant->multiplier != NULL
           && quant->shift != NULL && w_dims->h * w_dims->w * w_dims->c == in_dims->c && out_dims->c == w_dims->n
           && out_dims->n * out_dims->h * out_dims->w == in_dims->n * in_dims->h * in_dims->w
           && quant->input_offset == 0 && quant->weights_offset == 0 && quant->output_offset == 0
           && mcu_activation_valid(&params->activation, MCU_INT16);
}

/* Two int16 operands of the output's shape, dense output (the variants do not broadcast). */
static inline int32_t mcu_s16_add_arguments_valid(const mcu_elementwise_params *params, const mcu_add_quant *quant,
                                                  const mcu_dims *in1_dims, const int16_t *in1,
                                                  const mcu_dims *in2_dims, const int16_t *in2,
                                                  const mcu_dims *out_dims, const int16_t *out) {
    return params != NULL && quant != NULL && mcu_dims_valid(in1_dims) && mcu_dims_valid(in2_dims)
           && mcu_dims_valid(out_dims) && in1 != NULL && in2 != NULL && out != NULL
           && mcu_dims_equal(in1_dims, out_dims) && mcu_dims_equal(in2_dims, out_dims) && quant->left_shift == 15
           && quant->input1_offset == 0 && quant->input2_offset == 0 && quant->output_offset == 0
           && quant->input1_shift <= 0 && quant->input2_shift <= 0 && quant->output_shift <= 0
           && quant->input1_shift >= -31 && quant->input2_shift >= -31
           && mcu_activation_valid(&params->activation, MCU_INT16);
}

#endif /* MCU_S16_VARIANTS_H */
