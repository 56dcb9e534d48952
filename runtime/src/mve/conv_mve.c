/*
 * conv_mve.c - mcu_conv2d_s8_mve: int8 convolution (groups = 1), NHWC, for cores with the
 * M-profile Vector Extension (Helium: Cortex-M55, M85).
 *
 * Two output pixels at a time: im2col copies each pixel's receptive field, K = kH*kW*C raw
 * int8 values in the weights' (i, j, c) order, into an int8 column of Kp = ceil16(K) bytes
 * (padding taps = the input zero point, with MVE copies of whole kernel rows or taps, one
 * predicated copy per kernel row when a row is at most 16 bytes; the K..Kp tail is left as it
 * is, its weights are 0), then
 * 2 columns x 4 output channels per block, 8 VMLADAVA.S8 per 16 k (mcu_mve_gemm.h):
 *
 *   acc[p, o] = bias'[o] + sum_k W[o, k] * X_p[k],   bias'[o] = bias[o] + input_offset * sum_k W[o, k]
 *   Y[p, o]   = clamp(mbqm(acc, multiplier[o], shift[o]) + output_offset)     (4 channels per vector)
 *
 * A pointwise conv (1x1, stride 1, no padding) reads its input rows in place, without a
 * copy: with C % 16 != 0 a row's Kp = ceil16(C) bytes run into the next pixel, multiplied by
 * the zero padding of the weight rows (so a C = 8 conv costs no copy, only the padded MACs);
 * the last pair, whose rows would pass the tensor's end, goes through the columns. Weights: quad rows (mcu_runtime_mve.h); bias: bias' (folded
 * offline, mcudeploy kernels/mve.py).
 *
 * Out c_stride (mcu_runtime.h): output pixel p at out + p * c_stride.
 *
 * Access order (for the overlap proof): every pair of pixels is copied into the scratch
 * columns (or, pointwise, read in place: its reads start at the pair's first pixel and its
 * stores come after them) before any of its outputs is written.
 */
#include "mcu_mve_gemm.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

typedef struct {
    const mcu_conv_params *params;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    int32_t depth, row;     /* K and Kp */
    int32_t pad;            /* the input zero point */
} conv_shape;

/* The receptive field of output pixel `pixel` into `column` (Kp bytes). */
static void field(const conv_shape *shape, const int8_t *in, int32_t pixel, int8_t *column) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims, *out_dims = shape->out_dims;
    int32_t x = pixel % out_dims->w, y = (pixel / out_dims->w) % out_dims->h, batch = pixel / (out_dims->w * out_dims->h);
    int32_t channels = in_dims->c, kernel_w = shape->w_dims->w, taps_row = kernel_w * channels;
    int32_t in_x0 = x * p->stride_w - p->pad_left, in_y0 = y * p->stride_h - p->pad_top;
    int32_t whole = p->dilation_w == 1 && in_x0 >= 0 && in_x0 + kernel_w <= in_dims->w;
    int8_t *cursor = column;
    if (whole && taps_row <= 16 && in_y0 >= 0 && in_y0 + (shape->w_dims->h - 1) * p->dilation_h < in_dims->h) {
        /* an inside window of short kernel rows (first layers, C = 1..5): one predicated
         * copy per kernel row */
        mcu_pred lanes = mcu_vctp8(taps_row);
        int32_t row_step = p->dilation_h * in_dims->w * channels;
        const int8_t *source = in + ((batch * in_dims->h + in_y0) * in_dims->w + in_x0) * channels;
        for (int32_t i = 0; i < shape->w_dims->h; ++i, cursor += taps_row, source += row_step) {
            mcu_vst_s8_p(cursor, mcu_vld_s8_z(source, lanes), lanes);
        }
        return;   /* the K..Kp tail: anything (zero weights) */
    }
    for (int32_t i = 0; i < shape->w_dims->h; ++i, cursor += taps_row) {
        int32_t in_y = y * p->stride_h - p->pad_top + i * p->dilation_h;
        if (in_y < 0 || in_y >= in_dims->h) {
            mcu_mve_fill(cursor, shape->pad, taps_row);
            continue;
        }
        const int8_t *source = in + (batch * in_dims->h + in_y) * in_dims->w * channels;
        if (whole) {
            mcu_mve_copy(cursor, source + in_x0 * channels, taps_row);
            continue;
        }
        for (int32_t j = 0; j < kernel_w; ++j) {
            int32_t in_x = in_x0 + j * p->dilation_w;
            if (in_x < 0 || in_x >= in_dims->w) {
                mcu_mve_fill(cursor + j * channels, shape->pad, channels);
            } else {
                mcu_mve_copy(cursor + j * channels, source + in_x * channels, channels);
            }
        }
    }
    (void)cursor;   /* the K..Kp tail: anything, its weights are 0 (mcu_mve_gemm.h) */
}


static int32_t is_pointwise(const mcu_conv_params *params, const mcu_dims *in_dims, const mcu_dims *w_dims,
                            const mcu_dims *out_dims) {
    return w_dims->h == 1 && w_dims->w == 1 && params->stride_h == 1 && params->stride_w == 1
           && params->pad_top == 0 && params->pad_left == 0 && in_dims->h == out_dims->h
           && in_dims->w == out_dims->w;
}

int32_t mcu_conv2d_s8_mve_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                       const mcu_dims *w_dims, const mcu_dims *out_dims) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims) || !mcu_out_dims_valid(out_dims)) {
        return 0;
    }
    return MCU_CONV2D_S8_MVE_SCRATCH_BYTES(w_dims->h * w_dims->w * w_dims->c,
                                           is_pointwise(params, in_dims, w_dims, out_dims) && in_dims->c % 16 == 0);
}

mcu_status mcu_conv2d_s8_mve(const mcu_context *ctx, const mcu_conv_params *params,
                             const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                             const mcu_dims *out_dims, int8_t *out) {
    if (!mcu_conv_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out, 0) || bias == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t needed = mcu_conv2d_s8_mve_scratch_size(params, in_dims, w_dims, out_dims);
    int32_t pointwise = is_pointwise(params, in_dims, w_dims, out_dims);
    if (needed > 0 && (ctx == NULL || ctx->buffer == NULL || ctx->size < needed)) {
        return MCU_ERR_SCRATCH;
    }
    int32_t depth = w_dims->h * w_dims->w * w_dims->c;
    conv_shape shape = {params, in_dims, w_dims, out_dims, depth, mcu_mve_row_length(depth), -quant->input_offset};
    mcu_mve_gemm_output output = {quant->multiplier, quant->shift, bias, quant->output_offset, params->activation,
                                  mcu_mve_all_right_shifts(quant->shift, out_dims->c)};
    int8_t *column0 = needed > 0 ? (int8_t *)ctx->buffer : NULL, *column1 = column0 + (needed > 0 ? shape.row : 0);
    int32_t count = out_dims->n * out_dims->h * out_dims->w, channels = out_dims->c;
    int32_t pixel_stride = mcu_pixel_stride(out_dims);
    for (int32_t pixel = 0; pixel < count; pixel += 2) {
        int32_t pair = pixel + 1 < count;
        /* in place: a row of Kp > K bytes runs into the next pixel (zero weights there); the
         * last pixels, whose Kp bytes would pass the tensor's end, are copied instead */
        int32_t in_place = pointwise && (pixel + 1 + pair) * depth + shape.row - depth <= count * depth;
        const int8_t *first = in_place ? in + pixel * depth : column0;
        const int8_t *second = in_place ? in + (pixel + 1) * depth : column1;
        if (!in_place) {
            field(&shape, in, pixel, column0);
            if (pair) {
                field(&shape, in, pixel + 1, column1);
            }
        }
        mcu_mve_gemm(&output, first, pair ? second : NULL, w, shape.row, channels, out + pixel * pixel_stride,
                     pair ? out + (pixel + 1) * pixel_stride : NULL);
    }
    return MCU_OK;
}
