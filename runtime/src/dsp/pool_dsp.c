/*
 * pool_dsp.c - mcu_avg_pool_s8_dsp, mcu_max_pool_s8_dsp: int8 pooling, NHWC, for cores with
 * the DSP extension. Four channels per word:
 *
 *   average: SXTAB16 adds a word of four inputs to two pairs of 16-bit sums, exact for
 *            windows of up to 256 in-bounds elements (|sum| <= 256 * 128); then per channel
 *            acc > 0 ? (acc + count/2) / count : (acc - count/2) / count  (C division, the
 *            reference's rounding); larger windows sum in 32 bits
 *   max:     SSUB8 + SEL keep the bytewise maximum of four channels; the clamp to the
 *            activation is two more SSUB8 + SEL
 *
 * C % 4 tail channels run one at a time. Access order: output pixels in order; within a
 * pixel, each group of four channels reads its window, then writes its four outputs (the
 * reference's order, four channels at a time), so the reference kernel's overlap proof holds.
 */
#include "mcu_dsp_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_dsp.h"

/* Sums of channels c..c+3 over the window (count <= 256), as (c, c+2) and (c+1, c+3) pairs. */
static void group_sums(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c,
                       int32_t sums[4]) {
    int32_t even = 0, odd = 0, row_step = in_dims->w * in_dims->c;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        const int8_t *x = in + (window->origin + i * row_step + window->j0 * in_dims->c + c);
        for (int32_t j = window->j0; j < window->j1; ++j, x += in_dims->c) {
            int32_t word = mcu_read32(x);
            even = mcu_sxtab16(even, word);
            odd = mcu_sxtab16_ror8(odd, word);
        }
    }
    sums[0] = (int16_t)(uint16_t)((uint32_t)even & 0xFFFFu);
    sums[1] = (int16_t)(uint16_t)((uint32_t)odd & 0xFFFFu);
    sums[2] = even >> 16;
    sums[3] = odd >> 16;
}

static int32_t channel_sum(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c) {
    int32_t total = 0, row_step = in_dims->w * in_dims->c;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        for (int32_t j = window->j0; j < window->j1; ++j) {
            total += in[window->origin + i * row_step + j * in_dims->c + c];
        }
    }
    return total;
}

mcu_status mcu_avg_pool_s8_dsp(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_pool_arguments_valid(params, in_dims, in, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    int32_t channels = in_dims->c, groups = channels / 4, packed = params->kernel_h * params->kernel_w <= 256;
    int32_t low = params->activation.min, high = params->activation.max;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, out += mcu_pixel_stride(out_dims)) {
                mcu_pool_window window = mcu_pool_window_of(params, in_dims, n, y, x);
                int32_t c = 0;
                for (; packed && c < 4 * groups; c += 4) {
                    int32_t sums[4];
                    group_sums(in_dims, &window, in, c, sums);
                    for (int32_t r = 0; r < 4; ++r) {
                        out[c + r] = (int8_t)mcu_clamp(mcu_rounded_average(sums[r], window.count), low, high);
                    }
                }
                for (; c < channels; ++c) {
                    int32_t average = mcu_rounded_average(channel_sum(in_dims, &window, in, c), window.count);
                    out[c] = (int8_t)mcu_clamp(average, low, high);
                }
            }
        }
    }
    return MCU_OK;
}

/* Bytewise maximum of channels c..c+3 over the window (count >= 1). */
static int32_t group_max(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c) {
    int32_t maximum = (int32_t)0x80808080u, row_step = in_dims->w * in_dims->c;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        const int8_t *x = in + (window->origin + i * row_step + window->j0 * in_dims->c + c);
        for (int32_t j = window->j0; j < window->j1; ++j, x += in_dims->c) {
            maximum = mcu_max8(mcu_read32(x), maximum);
        }
    }
    return maximum;
}

static int32_t channel_max(const mcu_dims *in_dims, const mcu_pool_window *window, const int8_t *in, int32_t c) {
    int32_t maximum = INT8_MIN, row_step = in_dims->w * in_dims->c;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        for (int32_t j = window->j0; j < window->j1; ++j) {
            int32_t value = in[window->origin + i * row_step + j * in_dims->c + c];
            maximum = value > maximum ? value : maximum;
        }
    }
    return maximum;
}

mcu_status mcu_max_pool_s8_dsp(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_pool_arguments_valid(params, in_dims, in, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    int32_t channels = in_dims->c, groups = channels / 4;
    int32_t low = params->activation.min, high = params->activation.max;
    int32_t lows = (int32_t)((uint32_t)(uint8_t)low * 0x01010101u), highs = (int32_t)((uint32_t)(uint8_t)high * 0x01010101u);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, out += mcu_pixel_stride(out_dims)) {
                mcu_pool_window window = mcu_pool_window_of(params, in_dims, n, y, x);
                int32_t c = 0;
                for (; c < 4 * groups; c += 4) {
                    int32_t clamped = mcu_max8(group_max(in_dims, &window, in, c), lows);
                    mcu_write32(out + c, ~mcu_max8(~clamped, ~highs));   /* min(x, h) = ~max(~x, ~h) */
                }
                for (; c < channels; ++c) {
                    out[c] = (int8_t)mcu_clamp(channel_max(in_dims, &window, in, c), low, high);
                }
            }
        }
    }
    return MCU_OK;
}
