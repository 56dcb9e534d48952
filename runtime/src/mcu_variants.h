/*
 * mcu_variants.h - helpers shared by the optimised kernel variants (dsp/, mve/; internal
 * header): the in-bounds taps of a window kernel, the pooling window, and the argument
 * checks the variants share with the reference kernels. The conv, depthwise and pool checks
 * accept an out c_stride (mcu_runtime.h): those variants write pixel p at p * c_stride.
 *
 * Window taps along one axis, for a window starting at input index `start` (may be < 0)
 * with `kernel` taps `dilation` apart over an axis of `size`: taps first..end-1 are in bounds,
 *   first = start >= 0 ? 0 : ceil(-start / dilation)
 *   end   = start >= size ? 0 : min(kernel, floor((size - 1 - start) / dilation) + 1)
 */
#ifndef MCU_VARIANTS_H
#define MCU_VARIANTS_H

#include "mcu_internal.h"

static inline int32_t mcu_first_tap(int32_t start, int32_t dilation) {
    return start >= 0 ? 0 : (-start + dilation - 1) / dilation;
}

static inline int32_t mcu_end_tap(int32_t start, int32_t dilation, int32_t kernel, int32_t size) {
    if (start >= size) {
        return 0;
    }
    return start + (kernel - 1) * dilation < size ? kernel : (size - 1 - start) / dilation + 1;
}

/* The in-bounds part of one pooling window (rows i0..i1-1, columns j0..j1-1), the input
 * index of window element (0, 0) at channel 0, and the number of elements in bounds. */
typedef struct {
    int32_t i0, i1, j0, j1, origin, count;
} mcu_pool_window;

static inline mcu_pool_window mcu_pool_window_of(const mcu_pool_params *p, const mcu_dims *in_dims, int32_t n,
                                                 int32_t y, int32_t x) {
    mcu_pool_window window;
    int32_t in_y = y * p->stride_h - p->pad_top, in_x = x * p->stride_w - p->pad_left;
    window.i0 = mcu_first_tap(in_y, 1);
    window.i1 = mcu_end_tap(in_y, 1, p->kernel_h, in_dims->h);
    window.j0 = mcu_first_tap(in_x, 1);
    window.j1 = mcu_end_tap(in_x, 1, p->kernel_w, in_dims->w);
    window.origin = ((n * in_dims->h + in_y) * in_dims->w + in_x) * in_dims->c;
    window.count = (window.i1 > window.i0 && window.j1 > window.j0) ? (window.i1 - window.i0) * (window.j1 - window.j0)
                                                                     : 0;
    return window;
}

/* TFLite's average: acc > 0 ? (acc + count/2) / count : (acc - count/2) / count (C division). */
static inline int32_t mcu_rounded_average(int32_t total, int32_t count) {
    if (count == 0) {
        return 0;   /* a window entirely in the padding (the reference's value) */
    }
    return total > 0 ? (total + count / 2) / count : (total - count / 2) / count;
}

static inline int32_t mcu_pool_arguments_valid(const mcu_pool_params *p, const mcu_dims *in_dims, const int8_t *in,
                                               const mcu_dims *out_dims, const int8_t *out) {
    return p != NULL && mcu_dims_valid(in_dims) && mcu_out_dims_valid(out_dims) && in != NULL && out != NULL
           && p->stride_h >= 1 && p->stride_w >= 1 && p->kernel_h >= 1 && p->kernel_w >= 1 && p->pad_top >= 0
           && p->pad_left >= 0 && in_dims->n == out_dims->n && in_dims->c == out_dims->c
           && mcu_activation_valid(&p->activation, MCU_INT8);
}

/* Two operands of the output's shape (the variants do not broadcast). */
static inline int32_t mcu_same_shape_arguments_valid(const mcu_elementwise_params *params, const mcu_dims *in1_dims,
                                                     const int8_t *in1, const mcu_dims *in2_dims, const int8_t *in2,
                                                     const mcu_dims *out_dims, const int8_t *out) {
    return params != NULL && mcu_dims_valid(in1_dims) && mcu_dims_valid(in2_dims) && mcu_out_dims_valid(out_dims)
           && in1 != NULL && in2 != NULL && out != NULL && mcu_dims_equal(in1_dims, out_dims)
           && mcu_dims_equal(in2_dims, out_dims) && mcu_activation_valid(&params->activation, MCU_INT8);
}

/* Geometry, pointers and ranges of an int8 convolution (groups = 1) or depthwise one
 * (`depthwise`: multiplier 1, w_dims = {C, kH, kW, 1}). */
static inline int32_t mcu_conv_arguments_valid(const mcu_conv_params *p, const mcu_channel_quant *quant,
                                               const mcu_dims *in_dims, const int8_t *in, const mcu_dims *w_dims,
                                               const int8_t *w, const mcu_dims *out_dims, const int8_t *out,
                                               int32_t depthwise) {
    int32_t channels_match = depthwise ? w_dims != NULL && in_dims != NULL && out_dims != NULL && w_dims->c == 1
                                             && w_dims->n == in_dims->c && out_dims->c == in_dims->c
                                       : w_dims != NULL && in_dims != NULL && out_dims != NULL
                                             && in_dims->c == w_dims->c && w_dims->n == out_dims->c;
    return p != NULL && quant != NULL && mcu_dims_valid(in_dims) && mcu_dims_valid(w_dims) && mcu_out_dims_valid(out_dims)
           && in != NULL && w != NULL && out != NULL && quant->multiplier != NULL && quant->shift != NULL
           && p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1 && p->dilation_w >= 1 && p->pad_top >= 0
           && p->pad_left >= 0 && channels_match && out_dims->n == in_dims->n && quant->input_offset >= -127
           && quant->input_offset <= 128 && mcu_activation_valid(&p->activation, MCU_INT8);
}

/* The same for depthwise parameters (depth multiplier 1). */
static inline int32_t mcu_depthwise_arguments_valid(const mcu_depthwise_params *p, const mcu_channel_quant *quant,
                                                    const mcu_dims *in_dims, const int8_t *in,
                                                    const mcu_dims *w_dims, const int8_t *w,
                                                    const mcu_dims *out_dims, const int8_t *out) {
    if (p == NULL || p->depth_multiplier != 1) {
        return 0;
    }
    mcu_conv_params geometry = {p->stride_h, p->stride_w, p->pad_top, p->pad_left, p->dilation_h, p->dilation_w,
                                p->activation};
    return mcu_conv_arguments_valid(&geometry, quant, in_dims, in, w_dims, w, out_dims, out, 1);
}

#endif /* MCU_VARIANTS_H */
