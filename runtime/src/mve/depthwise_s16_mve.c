/*
 * depthwise_s16_mve.c - mcu_depthwise_conv2d_s16_mve: 16x8 depthwise convolution (depth
 * multiplier 1), NHWC, for Helium.
 *
 * Per output pixel, four channels per vector (int32 lanes): for every in-bounds tap the
 * channels' int16 inputs and int8 weights widened to int32 (VLDRH.S32, VLDRB.S32), VMUL +
 * VADD; the C % 4 tail predicated:
 *
 *   acc[c] = sum_{taps in bounds} W[c, i, j] * X[y*sh + i*dh - pt, x*sw + j*dw - pl, c]
 *   Y[c]   = clamp(mbqm64(acc + bias[c], multiplier[c], shift[c]))
 *
 * int32 lanes, exact for kH*kW <= 504 taps (mcu_s16_variants.h; more run the reference).
 * Weights: taps-major [kH*kW, C] (mcu_runtime_s16.h). Access order: pixel by pixel, four
 * channels stored before the next four are read (units of one pixel, reads not first).
 */
#include "mcu_mve_s16.h"
#include "mcu_runtime_s16.h"

typedef struct {
    const mcu_depthwise_params *params;
    const mcu_channel_quant *quant;
    const mcu_dims *in_dims, *w_dims;
    const int8_t *w;
    const int64_t *bias;
} depthwise_shape;

static void pixel(const depthwise_shape *shape, const int16_t *in, int32_t batch, int32_t y, int32_t x,
                  int16_t *out) {
    const mcu_depthwise_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, kernel_w = shape->w_dims->w;
    int32_t in_y = y * p->stride_h - p->pad_top, in_x = x * p->stride_w - p->pad_left;
    int32_t i0 = mcu_first_tap(in_y, p->dilation_h), i1 = mcu_end_tap(in_y, p->dilation_h, shape->w_dims->h, in_dims->h);
    int32_t j0 = mcu_first_tap(in_x, p->dilation_w), j1 = mcu_end_tap(in_x, p->dilation_w, kernel_w, in_dims->w);
    int32_t origin = ((batch * in_dims->h + in_y) * in_dims->w + in_x) * channels;
    int32_t row_step = p->dilation_h * in_dims->w * channels, column_step = p->dilation_w * channels;
    int32_t sums[4];
    for (int32_t c = 0; c < channels; c += 4) {
        mcu_pred pred = mcu_vctp32(channels - c);
        mcu_s32x4 acc = mcu_vdup_s32(0);
        for (int32_t i = i0; i < i1; ++i) {
            const int16_t *source = in + (origin + i * row_step + j0 * column_step + c);
            const int8_t *taps = shape->w + (i * kernel_w + j0) * channels + c;
            for (int32_t j = j0; j < j1; ++j, source += column_step, taps += channels) {
                acc = mcu_vadd_s32(acc, mcu_vmul_s32(mcu_vld_s16_s32_z(source, pred), mcu_vld_s8_s32_z(taps, pred)));
            }
        }
        for (int32_t r = 0; r < 4; ++r) {
            sums[r] = mcu_vlane_s32(acc, r);
        }
        for (int32_t r = 0; r < 4 && c + r < channels; ++r) {
            out[c + r] = mcu_s16_output(sums[r], shape->bias, shape->quant, c + r, &p->activation);
        }
    }
}

mcu_status mcu_depthwise_conv2d_s16_mve(const mcu_context *ctx, const mcu_depthwise_params *params,
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
