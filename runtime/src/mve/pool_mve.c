/*
 * pool_mve.c - mcu_avg_pool_s8_mve, mcu_max_pool_s8_mve: int8 pooling, NHWC, for cores with
 * MVE.
 *
 *   average: eight channels per vector, widening loads (VLDRB.S16) summed in 16-bit lanes,
 *            exact for windows of up to 256 in-bounds elements (|sum| <= 256 * 128; larger
 *            windows take the reference kernel, see accepts in kernels/mve.py); then per
 *            channel acc > 0 ? (acc + count/2) / count : (acc - count/2) / count (C division,
 *            the reference's rounding; MVE has no vector division)
 *   max:     sixteen channels per vector, VMAX.S8, then the clamp to the activation
 *
 * Tails are predicated. Access order: output pixels in order; within a pixel each group of
 * channels reads its window, then writes its outputs (the reference proof holds).
 */
#include "mcu_mve_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

/* Channels c..c+7 of one output pixel. */
static void average_group(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c,
                          mcu_activation activation, int8_t *out) {
    int32_t count = in_dims->c - c < 8 ? in_dims->c - c : 8, row_step = in_dims->w * in_dims->c;
    mcu_pred lanes = mcu_vctp16(count);
    mcu_s16x8 sum = mcu_vdup_s16(0);
    for (int32_t i = window->i0; i < window->i1; ++i) {
        const int8_t *x = in + (window->origin + i * row_step + window->j0 * in_dims->c + c);
        for (int32_t j = window->j0; j < window->j1; ++j, x += in_dims->c) {
            sum = mcu_vadd_s16(sum, mcu_vld_s8_s16_z(x, lanes));
        }
    }
    mcu_s32x4 even = mcu_vmovlb_s16(sum), odd = mcu_vmovlt_s16(sum);
    for (int32_t r = 0; r < count; ++r) {
        int32_t total = mcu_vlane_s32(r % 2 == 0 ? even : odd, r / 2);
        out[c + r] = (int8_t)mcu_clamp(mcu_rounded_average(total, window->count), activation.min, activation.max);
    }
}

mcu_status mcu_avg_pool_s8_mve(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_pool_arguments_valid(params, in_dims, in, out_dims, out) || params->kernel_h * params->kernel_w > 256) {
        return MCU_ERR_ARG;
    }
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, out += mcu_pixel_stride(out_dims)) {
                mcu_pool_window window = mcu_pool_window_of(params, in_dims, n, y, x);
                for (int32_t c = 0; c < in_dims->c; c += 8) {
                    average_group(in_dims, &window, in, c, params->activation, out);
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_max_pool_s8_mve(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_pool_arguments_valid(params, in_dims, in, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    mcu_s8x16 low = mcu_vdup_s8(params->activation.min), high = mcu_vdup_s8(params->activation.max);
    int32_t channels = in_dims->c, row_step = in_dims->w * channels;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, out += mcu_pixel_stride(out_dims)) {
                mcu_pool_window window = mcu_pool_window_of(params, in_dims, n, y, x);
                for (int32_t c = 0; c < channels; c += 16) {
                    mcu_pred lanes = mcu_vctp8(channels - c);
                    mcu_s8x16 maximum = mcu_vdup_s8(INT8_MIN);
                    for (int32_t i = window.i0; i < window.i1; ++i) {
                        const int8_t *p = in + (window.origin + i * row_step + window.j0 * channels + c);
                        for (int32_t j = window.j0; j < window.j1; ++j, p += channels) {
                            maximum = mcu_vmax_s8(maximum, mcu_vld_s8_z(p, lanes));
                        }
                    }
                    mcu_vst_s8_p(out + c, mcu_vmin_s8(mcu_vmax_s8(maximum, low), high), lanes);
                }
            }
        }
    }
    return MCU_OK;
}
