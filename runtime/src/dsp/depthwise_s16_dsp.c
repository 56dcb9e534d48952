/*
 * depthwise_s16_dsp.c - mcu_depthwise_conv2d_s16_dsp: 16x8 depthwise convolution (depth
 * multiplier 1), NHWC, for cores with the DSP extension.
 *
 * Per output pixel, four channels at a time over the window's in-bounds taps: the channels'
 * int16 inputs as two pairs (c0, c1), (c2, c3), a word of four weights (c0, c2, c1, c3)
 * split by SXTB16 / SXTB16 ROR 8 into (c0, c1), (c2, c3), then SMLABB / SMLATT:
 *
 *   acc[c] = sum_{taps in bounds} W[c, i, j] * X[y*sh + i*dh - pt, x*sw + j*dw - pl, c]
 *   Y[c]   = clamp(mbqm64(acc + bias[c], multiplier[c], shift[c]))
 *
 * int32 sums, exact for kH*kW <= 504 taps (mcu_s16_variants.h; more taps run the reference).
 * Weights: taps-major [kH*kW, C], each tap's row in the "s16 quads" layout
 * (mcu_runtime_s16.h); the C % 4 tail channels plain. Access order: pixel by pixel, four
 * channels stored before the next four are read (units of one pixel, reads not first).
 */
#include "mcu_dsp_s16.h"
#include "mcu_runtime_s16.h"

typedef struct {
    const mcu_depthwise_params *params;
    const mcu_channel_quant *quant;
    const mcu_dims *in_dims, *w_dims;
    const int8_t *w;
    const int64_t *bias;
} depthwise_shape;

/* The in-bounds window of one output pixel: taps i0..i1-1, j0..j1-1, and where they start. */
typedef struct {
    int32_t i0, i1, j0, j1, origin, row_step, column_step;
} window;

/* Channels c..c+3 (a whole group of the "s16 quads" layout): SMLABB / SMLATT per tap. */
static void group_of_four(const depthwise_shape *shape, const window *view, const int16_t *in, int32_t c,
                          int32_t sums[4]) {
    int32_t channels = shape->in_dims->c, kernel_w = shape->w_dims->w;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int32_t i = view->i0; i < view->i1; ++i) {
        const int16_t *source = in + (view->origin + i * view->row_step + view->j0 * view->column_step + c);
        const int8_t *taps = shape->w + (i * kernel_w + view->j0) * channels + c;
        for (int32_t j = view->j0; j < view->j1; ++j, source += view->column_step, taps += channels) {
            int32_t weights = mcu_read32(taps), low = mcu_sxtb16(weights), high = mcu_sxtb16_ror8(weights);
            int32_t x01 = mcu_read32(source), x23 = mcu_read32(source + 2);
            s0 = mcu_smlabb(x01, low, s0);
            s1 = mcu_smlatt(x01, low, s1);
            s2 = mcu_smlabb(x23, high, s2);
            s3 = mcu_smlatt(x23, high, s3);
        }
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
}

/* One tail channel (C % 4 of them, plain bytes). */
static int32_t single_channel(const depthwise_shape *shape, const window *view, const int16_t *in, int32_t c) {
    int32_t channels = shape->in_dims->c, kernel_w = shape->w_dims->w, sum = 0;
    for (int32_t i = view->i0; i < view->i1; ++i) {
        for (int32_t j = view->j0; j < view->j1; ++j) {
            sum += (int32_t)in[view->origin + i * view->row_step + j * view->column_step + c]
                   * shape->w[(i * kernel_w + j) * channels + c];
        }
    }
    return sum;
}

/* Output pixel (y, x) of batch `batch`: all its channels. */
static void pixel(const depthwise_shape *shape, const int16_t *in, int32_t batch, int32_t y, int32_t x,
                  int16_t *out) {
    const mcu_depthwise_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, whole = channels / 4 * 4;
    int32_t in_y = y * p->stride_h - p->pad_top, in_x = x * p->stride_w - p->pad_left;
    window view = {mcu_first_tap(in_y, p->dilation_h), mcu_end_tap(in_y, p->dilation_h, shape->w_dims->h, in_dims->h),
                   mcu_first_tap(in_x, p->dilation_w), mcu_end_tap(in_x, p->dilation_w, shape->w_dims->w, in_dims->w),
                   ((batch * in_dims->h + in_y) * in_dims->w + in_x) * channels,
                   p->dilation_h * in_dims->w * channels, p->dilation_w * channels};
    int32_t sums[4];
    for (int32_t c = 0; c < whole; c += 4) {
        group_of_four(shape, &view, in, c, sums);
        for (int32_t r = 0; r < 4; ++r) {
            out[c + r] = mcu_s16_output(sums[r], shape->bias, shape->quant, c + r, &p->activation);
        }
    }
    for (int32_t c = whole; c < channels; ++c) {
        out[c] = mcu_s16_output(single_channel(shape, &view, in, c), shape->bias, shape->quant, c, &p->activation);
    }
}

mcu_status mcu_depthwise_conv2d_s16_dsp(const mcu_context *ctx, const mcu_depthwise_params *params,
                                        const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                        const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                        const int64_t *bias, const mcu_dims *out_dims, int16_t *out) {
    if (params == NULL || quant == NULL || w_dims == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->depth_multiplier != 1 || quant->input_offset != 0 || quant->output_offset != 0
        || w_dims->h * w_dims->w > MCU_S16_CHUNK) {
        return mcu_depthwise_conv2d_s16(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
    }
    mcu_conv_params geometry = {params->stride_h, params->stride_w, params->pad_top, params->pad_left,
                                params->dilation_h, params->dilation_w, params->activation};
    if (!mcu_s16_conv_arguments_valid(&geometry, quant, in_dims, in, w_dims, w, out_dims, out, 1)) {
        return MCU_ERR_ARG;
    }
    depthwise_shape shape = {params, quant, in_dims, w_dims, w, bias};
    int32_t stride = mcu_pixel_stride(out_dims), index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, index += stride) {
                pixel(&shape, in, n, y, x, out + index);
            }
        }
    }
    return MCU_OK;
}
