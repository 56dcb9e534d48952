/*
 * depthwise_dsp.c - mcu_depthwise_conv2d_s8_dsp: int8 depthwise convolution, depth
 * multiplier 1, NHWC, any kernel size, stride, dilation and padding, for cores with the DSP
 * extension.
 *
 * Four channels at a time: one word of input (channels c..c+3 of one tap) becomes, with the
 * input offset added, (c, c+2) and (c+1, c+3) halves by SXTAB16 / SXTAB16 ROR 8; the
 * matching weight word by SXTB16 / SXTB16 ROR 8; then four 16x16 multiply-accumulates
 * (SMLABB / SMLATT) per tap:
 *
 *   acc[c] = bias[c] + sum_{taps in bounds} W[c, i, j] * (X[y*sh + i*dh - pt, x*sw + j*dw - pl, c] + input_offset)
 *
 * Taps in the padding are skipped (they add 0, as in the reference). Weights: the
 * "depthwise groups" layout of mcu_runtime_dsp.h (per group of four channels the kH*kW taps,
 * four bytes each; the C % 4 tail channels last, tap-major). Remaining C % 4 channels run
 * one at a time.
 *
 * Loop order: output rows; within a row, groups of four channels (their scales decoded
 * once per row); within a group, the row's pixels. Access order (for the overlap proof):
 * a row's stores are interleaved with its own reads but precede every read of the next
 * rows: units of one output row, reads not first (kernels/overlap_blocked.py).
 */
#include "mcu_dsp_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_dsp.h"

typedef struct {
    const mcu_depthwise_params *params;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    const mcu_channel_quant *quant;
    const int32_t *bias;
    int32_t offset_pair;     /* (input_offset, input_offset) as two halves */
    int32_t reach;           /* mcu_dsp_reach(kH * kW) */
} depthwise_shape;

/* The in-bounds taps of one output row (rows i0..i1-1, with the input index of tap row
 * 0) and of one output pixel in it (columns j0..j1-1, index offset of tap column 0). */
typedef struct {
    int32_t i0, i1, row_index;
    int32_t j0, j1, column_index;
} tap_window;

static void row_window(const depthwise_shape *shape, int32_t batch, int32_t y, tap_window *window) {
    const mcu_dims *in_dims = shape->in_dims;
    int32_t in_y = y * shape->params->stride_h - shape->params->pad_top;
    window->i0 = mcu_first_tap(in_y, shape->params->dilation_h);
    window->i1 = mcu_end_tap(in_y, shape->params->dilation_h, shape->w_dims->h, in_dims->h);
    window->row_index = (batch * in_dims->h + in_y) * in_dims->w * in_dims->c;
}

static inline void column_window(const depthwise_shape *shape, int32_t x, tap_window *window) {
    int32_t in_x = x * shape->params->stride_w - shape->params->pad_left;
    window->j0 = mcu_first_tap(in_x, shape->params->dilation_w);
    window->j1 = mcu_end_tap(in_x, shape->params->dilation_w, shape->w_dims->w, shape->in_dims->w);
    window->column_index = in_x * shape->in_dims->c;
}

/* acc[0..3] += the in-bounds taps of channels c..c+3 (input index of tap (0, 0) of channel c:
 * `first`), `w` = the group's kH*kW words. */
static void group_taps(const depthwise_shape *shape, const tap_window *window, const int8_t *in,
                       int32_t first, const int8_t *w, int32_t acc[4]) {
    const mcu_depthwise_params *p = shape->params;
    int32_t row_step = p->dilation_h * shape->in_dims->w * shape->in_dims->c;
    int32_t column_step = p->dilation_w * shape->in_dims->c, kernel_w = shape->w_dims->w;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], offset = shape->offset_pair;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        const int8_t *taps_in = in + (first + i * row_step + window->j0 * column_step);
        const int8_t *taps = w + 4 * (i * kernel_w + window->j0);
        for (int32_t j = window->j0; j < window->j1; ++j, taps_in += column_step, taps += 4) {
            int32_t x = mcu_read32(taps_in), weights = mcu_read32(taps);
            int32_t x02 = mcu_sxtab16(offset, x), x13 = mcu_sxtab16_ror8(offset, x);
            int32_t w02 = mcu_sxtb16(weights), w13 = mcu_sxtb16_ror8(weights);
            a0 = mcu_smlabb(x02, w02, a0);
            a2 = mcu_smlatt(x02, w02, a2);
            a1 = mcu_smlabb(x13, w13, a1);
            a3 = mcu_smlatt(x13, w13, a3);
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#if MCU_DSP_NATIVE
/* All nine taps of a 3x3 window (dilation 1) of channels c..c+3: `x` = tap (0, 0) of
 * channel c, `w` = the group's nine weight words; 10 instructions per tap. */
#define MCU_DW_TAP(load_x, weight_offset)                  \
    "ldr %[in], " load_x "\n\t"                            \
    "ldr %[wt], [%[w], #" weight_offset "]\n\t"           \
    "sxtab16 %[x02], %[off], %[in]\n\t"                    \
    "sxtab16 %[in], %[off], %[in], ror #8\n\t"             \
    "sxtb16 %[w02], %[wt]\n\t"                             \
    "sxtb16 %[wt], %[wt], ror #8\n\t"                      \
    "smlabb %[a0], %[x02], %[w02], %[a0]\n\t"              \
    "smlatt %[a2], %[x02], %[w02], %[a2]\n\t"              \
    "smlabb %[a1], %[in], %[wt], %[a1]\n\t"                \
    "smlatt %[a3], %[in], %[wt], %[a3]\n\t"
#define MCU_DW_ROW(w0, w1, w2) \
    MCU_DW_TAP("[%[x]]", w0) MCU_DW_TAP("[%[x], %[cs]]", w1) MCU_DW_TAP("[%[x], %[cs], lsl #1]", w2)

static void group_3x3(const int8_t *x, int32_t column_step, int32_t row_step, const int8_t *w, int32_t offset,
                      int32_t acc[4]) {
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], in, wt, x02, w02;
    __asm__(MCU_DW_ROW("0", "4", "8") "add %[x], %[x], %[rs]\n\t"
            MCU_DW_ROW("12", "16", "20") "add %[x], %[x], %[rs]\n\t"
            MCU_DW_ROW("24", "28", "32")
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [in] "=&r"(in),
              [wt] "=&r"(wt), [x02] "=&r"(x02), [w02] "=&r"(w02)
            : [cs] "r"(column_step), [rs] "r"(row_step), [w] "r"(w), [off] "r"(offset)
            : "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
static void group_3x3(const int8_t *x, int32_t column_step, int32_t row_step, const int8_t *w, int32_t offset,
                      int32_t acc[4]) {
    for (int32_t tap = 0; tap < 9; ++tap, w += 4) {
        int32_t in = mcu_read32(x + (tap / 3) * row_step + (tap % 3) * column_step), weights = mcu_read32(w);
        int32_t x02 = mcu_sxtab16(offset, in), x13 = mcu_sxtab16_ror8(offset, in);
        acc[0] = mcu_smlabb(x02, mcu_sxtb16(weights), acc[0]);
        acc[2] = mcu_smlatt(x02, mcu_sxtb16(weights), acc[2]);
        acc[1] = mcu_smlabb(x13, mcu_sxtb16_ror8(weights), acc[1]);
        acc[3] = mcu_smlatt(x13, mcu_sxtb16_ror8(weights), acc[3]);
    }
}
#endif

/* One channel (the C % 4 tail): `w` = its kH*kW bytes, `stride` bytes apart. */
static int32_t channel_taps(const depthwise_shape *shape, const tap_window *window, const int8_t *in,
                            int32_t first, const int8_t *w, int32_t stride, int32_t acc) {
    const mcu_depthwise_params *p = shape->params;
    int32_t row_step = p->dilation_h * shape->in_dims->w * shape->in_dims->c;
    int32_t column_step = p->dilation_w * shape->in_dims->c, kernel_w = shape->w_dims->w;
    int32_t offset = (int16_t)shape->offset_pair;
    for (int32_t i = window->i0; i < window->i1; ++i) {
        for (int32_t j = window->j0; j < window->j1; ++j) {
            int32_t value = in[first + i * row_step + j * column_step] + offset;
            acc = (int32_t)((uint32_t)acc + (uint32_t)(w[(i * kernel_w + j) * stride] * value));
        }
    }
    return acc;
}

static mcu_dsp_scale scale_of(const depthwise_shape *shape, int32_t channel, int32_t *bias) {
    *bias = shape->bias != NULL ? shape->bias[channel] : 0;
    return mcu_dsp_scale_of(shape->quant->multiplier[channel], shape->quant->shift[channel], *bias, shape->reach);
}

static int8_t requantize(const depthwise_shape *shape, int32_t acc, const mcu_dsp_scale *scale) {
    const mcu_activation *activation = &shape->params->activation;
    return mcu_dsp_output_any(acc, scale, shape->quant->output_offset, activation->min, activation->max);
}

/* out[0..3] of four accumulators. */
static void store_group(const depthwise_shape *shape, const int32_t acc[4], const mcu_dsp_scale scales[4],
                        int32_t wide, int8_t *out) {
    const mcu_activation *activation = &shape->params->activation;
    int32_t offset = shape->quant->output_offset, low = activation->min, high = activation->max;
    if (wide) {
        for (int32_t r = 0; r < 4; ++r) {
            out[r] = requantize(shape, acc[r], &scales[r]);
        }
        return;
    }
    out[0] = mcu_dsp_output(acc[0], &scales[0], offset, low, high);
    out[1] = mcu_dsp_output(acc[1], &scales[1], offset, low, high);
    out[2] = mcu_dsp_output(acc[2], &scales[2], offset, low, high);
    out[3] = mcu_dsp_output(acc[3], &scales[3], offset, low, high);
}

/* Channels 4g..4g+3 of every pixel of one output row (`out` = the row's first pixel). */
static void row_group(const depthwise_shape *shape, tap_window *window, const int8_t *in, const int8_t *w,
                      int32_t group, int8_t *out) {
    int32_t channels = shape->in_dims->c, bias[4], wide = 0;
    mcu_dsp_scale scales[4];
    for (int32_t r = 0; r < 4; ++r) {
        scales[r] = scale_of(shape, 4 * group + r, &bias[r]);
        wide |= scales[r].wide;
    }
    const mcu_depthwise_params *p = shape->params;
    int32_t column_step = channels, row_step = shape->in_dims->w * channels;
    int32_t full_rows = window->i0 == 0 && window->i1 == 3 && shape->w_dims->h == 3 && shape->w_dims->w == 3
                        && p->dilation_h == 1 && p->dilation_w == 1;
    int32_t pixel_stride = mcu_pixel_stride(shape->out_dims);
    for (int32_t x = 0; x < shape->out_dims->w; ++x, out += pixel_stride) {
        int32_t acc[4] = {bias[0], bias[1], bias[2], bias[3]};
        column_window(shape, x, window);
        int32_t first = window->row_index + window->column_index + 4 * group;
        if (full_rows && window->j0 == 0 && window->j1 == 3) {
            group_3x3(in + first, column_step, row_step, w, shape->offset_pair, acc);
        } else {
            group_taps(shape, window, in, first, w, acc);
        }
        store_group(shape, acc, scales, wide, out + 4 * group);
    }
}

/* One tail channel of every pixel of one output row. */
static void row_channel(const depthwise_shape *shape, tap_window *window, const int8_t *in, const int8_t *w,
                        int32_t stride, int32_t channel, int8_t *out) {
    int32_t bias;
    mcu_dsp_scale scale = scale_of(shape, channel, &bias);
    for (int32_t x = 0; x < shape->out_dims->w; ++x, out += mcu_pixel_stride(shape->out_dims)) {
        column_window(shape, x, window);
        int32_t acc = channel_taps(shape, window, in, window->row_index + window->column_index + channel, w,
                                   stride, bias);
        out[channel] = requantize(shape, acc, &scale);
    }
}

mcu_status mcu_depthwise_conv2d_s8_dsp(const mcu_context *ctx, const mcu_depthwise_params *params,
                                       const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                       const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                       const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_depthwise_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    int32_t taps = w_dims->h * w_dims->w, channels = in_dims->c, groups = channels / 4;
    depthwise_shape shape = {params, in_dims, w_dims, out_dims, quant, bias, 0, mcu_dsp_reach(taps)};
    shape.offset_pair = mcu_dsp_pair(quant->input_offset);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y, out += out_dims->w * mcu_pixel_stride(out_dims)) {
            tap_window window;
            row_window(&shape, n, y, &window);
            for (int32_t g = 0; g < groups; ++g) {
                row_group(&shape, &window, in, w + 4 * g * taps, g, out);
            }
            for (int32_t c = 4 * groups; c < channels; ++c) {
                row_channel(&shape, &window, in, w + 4 * groups * taps + (c - 4 * groups), channels - 4 * groups, c,
                            out);
            }
        }
    }
    return MCU_OK;
}
