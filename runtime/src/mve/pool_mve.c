/*
 * pool_mve.c - mcu_avg_pool_s8_mve, mcu_max_pool_s8_mve: int8 pooling, NHWC, for cores with
 * MVE.
 *
 *   average: eight channels per vector, widening loads (VLDRB.S16) summed in 16-bit lanes,
 *            exact for windows of up to 256 in-bounds elements (|sum| <= 256 * 128; larger
 *            windows take the reference kernel, see accepts in kernels/mve.py); then per
 *            channel acc > 0 ? (acc + count/2) / count : (acc - count/2) / count (C division,
 *            the reference's rounding; MVE has no vector division: a multiply by the
 *            window's reciprocal, exact, see rounded_average), clamped in 16-bit lanes
 *   max:     sixteen channels per vector, VMAX.S8, then the clamp to the activation
 *
 * Tails are predicated. Access order: output pixels in order; within a pixel each group of
 * channels reads its window, then writes its outputs (the reference proof holds).
 */
#include "mcu_mve_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

/* The rounded average of four window sums: sign(acc) * floor((|acc| + count/2) / count), the
 * reference's C division, as floor(2n * m / 2^31) (VQDMULH) with n = |acc| + count/2 and
 * m = ceil(2^30 / count), exact: with m * count = 2^30 + e, 0 <= e < count,
 * n * m / 2^30 = n / count + n * e / (count * 2^30), and n * e < 32,896 * 256 < 2^30 keeps
 * the floor; count 0 (a window in the padding) has m = 0: 0. */
static inline mcu_s32x4 rounded_average(mcu_s32x4 acc, int32_t half, int32_t reciprocal) {
    mcu_s32x4 sign = mcu_vsign_s32(acc);
    sign = mcu_vadd_n_s32(mcu_vadd_s32(sign, sign), 1);   /* -1 or 1 */
    mcu_s32x4 n = mcu_vadd_n_s32(mcu_vmul_s32(acc, sign), half);
    return mcu_vmul_s32(mcu_vqdmulh_n_s32(mcu_vadd_s32(n, n), reciprocal), sign);
}

/* Channels c..c+7 of one output pixel. */
static void average_group(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c,
                          int32_t reciprocal, mcu_s16x8 low, mcu_s16x8 high, int8_t *out) {
    int32_t row_step = in_dims->w * in_dims->c;
    mcu_pred lanes = mcu_vctp16(in_dims->c - c);
    mcu_s16x8 sum = mcu_vdup_s16(0);
    for (int32_t i = window->i0; i < window->i1; ++i) {
        const int8_t *x = in + (window->origin + i * row_step + window->j0 * in_dims->c + c);
        for (int32_t j = window->j0; j < window->j1; ++j, x += in_dims->c) {
            sum = mcu_vadd_s16(sum, mcu_vld_s8_s16_z(x, lanes));
        }
    }
    int32_t half = window->count / 2;
    mcu_s16x8 value = mcu_vqmovn_pair_s32(rounded_average(mcu_vmovlb_s16(sum), half, reciprocal),
                                          rounded_average(mcu_vmovlt_s16(sum), half, reciprocal));
    mcu_vst_s16_as_s8_p(out + c, mcu_vmin_s16(mcu_vmax_s16(value, low), high), lanes);
}

mcu_status mcu_avg_pool_s8_mve(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_pool_arguments_valid(params, in_dims, in, out_dims, out) || params->kernel_h * params->kernel_w > 256) {
        return MCU_ERR_ARG;
    }
    mcu_s16x8 low = mcu_vdup_s16(params->activation.min), high = mcu_vdup_s16(params->activation.max);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, out += mcu_pixel_stride(out_dims)) {
                mcu_pool_window window = mcu_pool_window_of(params, in_dims, n, y, x);
                int32_t reciprocal = window.count > 0 ? (int32_t)(((1u << 30) + (uint32_t)window.count - 1)
                                                                  / (uint32_t)window.count) : 0;
                for (int32_t c = 0; c < in_dims->c; c += 8) {
                    average_group(in_dims, &window, in, c, reciprocal, low, high, out);
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
