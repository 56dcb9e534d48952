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
 * 3x3, dilation 1, with at most one border pixel on each side missing one kernel column
 * ("row blocks", checked once per call; the other layers, and the output rows with fewer than
 * two kernel rows in range, take the window loop): per output row and group the kernel rows
 * in range i0..i1-1 (two or three) and the biases of the row's three column classes,
 *
 *   bias[c] + input_offset * sum_{i0 <= i < i1, j in range} W[c, i, j]   (all three columns;
 *                                                  without column 0; without column 2)
 *
 * summed once (SXTAB16 column sums, SADD16, SMLABB / SMLATB); then one call runs the row:
 * the left border pixel, the interior pixels, the right border pixel, each through the
 * block of its taps in range (group_RxC of mcu_dsp_depthwise.h, R, C = 2 or 3, inline asm,
 * the taps read without the offset: SXTB16 only), no per-tap bound checks.
 *
 * Output stage of a "simple" group (every channel not wide, shift -1..-22): the output
 * offset folded into the rounding term (round + output_offset * 2^right), SSAT to int8, the
 * four bytes packed (PKHBT, UXTB16) and clamped bytewise (SSUB8 + SEL), one word store
 * (store_simple, asm). When every group is simple (checked once per call) the row's stage
 * is read from the arrays without the checks; a group that is not simple takes each
 * channel's own form (store_any, run_row_any).
 *
 * Loop order: output rows; within a row, groups of four channels (their scales decoded
 * and row biases summed once per row); within a group, the row's pixels. Access order (for the overlap proof):
 * a row's stores are interleaved with its own reads but precede every read of the next
 * rows: units of one output row, reads not first (kernels/overlap_blocked.py).
 */
#include "mcu_dsp_depthwise.h"
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
    int32_t x_first, x_end;  /* the output columns whose window is inside the input */
    int32_t unrolled;        /* 3x3, dilation 1: the interior pixels through group_3x3 */
    int32_t blocks;          /* unrolled, borders of one missing column: row_group_blocks */
    int32_t all_simple;      /* every group simple: the stage without checks */
    int32_t low_bytes, high_bytes;   /* the activation bounds, four bytes each */
    uint32_t simple_limit;   /* |bias| below 2^30 - reach: never wide (0: none) */
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

/* The output stage of one group of four channels, decoded once per output row. "Simple"
 * (every channel: not wide, left shift 0, right shift 1..22): the output offset folded into
 * the rounding term, round = 2^(right-1) + output_offset * 2^right, which the floor of the
 * shift carries through exactly (|value + round| < 2^31 for right <= 22). */
typedef struct {
    int32_t bias[4];
    simple_stage simple_part;                    /* the simple stage */
    mcu_dsp_scale scales[4];                     /* any channel */
    int32_t simple;
} group_stage;

static void decode_group(const depthwise_shape *shape, int32_t first, group_stage *stage) {
    const mcu_channel_quant *quant = shape->quant;
    int32_t simple = 1;
    for (int32_t r = 0; r < 4; ++r) {   /* the simple stage straight from the arrays */
        int32_t bias = shape->bias != NULL ? shape->bias[first + r] : 0, right = -quant->shift[first + r];
        uint32_t magnitude = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias;
        simple &= right >= 1 && right <= 22 && quant->multiplier[first + r] >= 0 && magnitude < shape->simple_limit;
        right = right >= 1 && right <= 22 ? right : 1;
        stage->bias[r] = bias;
        stage->simple_part.multiplier[r] = quant->multiplier[first + r];
        stage->simple_part.right[r] = right;
        stage->simple_part.round[r] = (int32_t)(((uint32_t)1 << (right - 1))
                                                + ((uint32_t)quant->output_offset << right));
    }
    stage->simple_part.low_bytes = shape->low_bytes;
    stage->simple_part.high_bytes = shape->high_bytes;
    stage->simple = simple;
    for (int32_t r = 0; r < 4 && !simple; ++r) {
        stage->scales[r] = scale_of(shape, first + r, &stage->bias[r]);
    }
}

/* out[0..3] of a group that is not simple: each channel by its own form (wide: TFLite's). */
static void store_any(const depthwise_shape *shape, const group_stage *stage, const int32_t acc[4], int8_t *out) {
    for (int32_t r = 0; r < 4; ++r) {
        out[r] = requantize(shape, acc[r], &stage->scales[r]);
    }
}

/* out[0..3] of four accumulators, any group. */
MCU_DSP_INLINE void store_group(const depthwise_shape *shape, const group_stage *stage, const int32_t acc[4],
                                int8_t *out) {
    if (stage->simple) {
        store_simple(&stage->simple_part, acc, out);
    } else {
        store_any(shape, stage, acc, out);
    }
}

/* Pixels x0..x1-1 of one output row, channels 4g..4g+3, every tap through the window loop. */
static void pixels_any(const depthwise_shape *shape, tap_window *window, const int8_t *in, const int8_t *w,
                       int32_t group, const group_stage *stage, int32_t x0, int32_t x1, int8_t *out) {
    int32_t pixel_stride = mcu_pixel_stride(shape->out_dims);
    for (int32_t x = x0; x < x1; ++x) {
        int32_t acc[4] = {stage->bias[0], stage->bias[1], stage->bias[2], stage->bias[3]};
        column_window(shape, x, window);
        group_taps(shape, window, in, window->row_index + window->column_index + 4 * group, w, acc);
        store_group(shape, stage, acc, out + x * pixel_stride + 4 * group);
    }
}

/* The 3x3 row blocks ("blocks": 3x3, dilation 1, at most one border pixel on each side,
 * each missing exactly one kernel column; checked once per call), for the output rows with
 * two or three kernel rows in range. Per output row and group: the stage (read straight
 * from the arrays when every group is simple, also checked once per call), the biases of
 * the row's kernel rows in range (all three columns; without column 0; without column 2)
 * summed once, then one call that runs the row's pixels through blocks of their taps in
 * range (mcu_dsp_depthwise.h): the left border pixel, the interior, the right border pixel. */
typedef struct {
    simple_stage stage;
    const depthwise_shape *shape;
    const group_stage *any;               /* a group that is not simple: its scales */
    int32_t full[4], left[4], right[4];   /* the accumulators' start per column class */
    int32_t column_step, row_step;        /* C, W * C: between taps */
    int32_t x_step, out_step;             /* stride_w * C, the output pixel stride */
    int32_t left_pixel, interior, right_pixel;   /* pixel counts: 0 / 1, >= 0, 0 / 1 */
    int32_t interior_start, right_start;  /* byte offsets from input column 0 */
} row_run;

/* out[0..3] of one pixel of the run: the asm stage (simple) or each channel's own form. */
MCU_DSP_INLINE void store_pixel(const row_run *run, const int32_t acc[4], int8_t *out, int32_t simple) {
    if (simple) {
        store_simple(&run->stage, acc, out);
    } else {
        store_any(run->shape, run->any, acc, out);
    }
}

/* One row of pixels through blocks of `rows` kernel rows (`x`: the input at kernel row i0,
 * column 0 of the input; `w`: the group's weights at row i0; `out`: the row's first pixel). */
MCU_DSP_INLINE void run_row(const int8_t *x, const int8_t *w, const row_run *run, int8_t *out, int32_t rows,
                            int32_t simple) {
    int32_t column_step = run->column_step, row_step = run->row_step, out_step = run->out_step;
    if (run->left_pixel) {
        int32_t acc[4] = {run->left[0], run->left[1], run->left[2], run->left[3]};
        if (rows == 3) {
            group_3x2(x, column_step, row_step, w + 4, acc);
        } else {
            group_2x2(x, column_step, row_step, w + 4, acc);
        }
        store_pixel(run, acc, out, simple);
        out += out_step;
    }
    const int8_t *pixel = x + run->interior_start;
    for (int32_t count = run->interior; count > 0; --count, pixel += run->x_step, out += out_step) {
        int32_t acc[4] = {run->full[0], run->full[1], run->full[2], run->full[3]};
        if (rows == 3) {
            group_3x3(pixel, column_step, row_step, w, acc);
        } else {
            group_2x3(pixel, column_step, row_step, w, acc);
        }
        store_pixel(run, acc, out, simple);
    }
    if (run->right_pixel) {
        int32_t acc[4] = {run->right[0], run->right[1], run->right[2], run->right[3]};
        if (rows == 3) {
            group_3x2(x + run->right_start, column_step, row_step, w, acc);
        } else {
            group_2x2(x + run->right_start, column_step, row_step, w, acc);
        }
        store_pixel(run, acc, out, simple);
    }
}

MCU_DSP_NOINLINE void run_row3(const int8_t *x, const int8_t *w, const row_run *run, int8_t *out) {
    run_row(x, w, run, out, 3, 1);
}

MCU_DSP_NOINLINE void run_row2(const int8_t *x, const int8_t *w, const row_run *run, int8_t *out) {
    run_row(x, w, run, out, 2, 1);
}

/* A group that is not simple (a wide channel, a left shift): rarely, one function for both. */
MCU_DSP_NOINLINE void run_row_any(const int8_t *x, const int8_t *w, const row_run *run, int8_t *out, int32_t rows) {
    run_row(x, w, run, out, rows, 0);
}

/* Whether the borders are those run_row runs (3x3, dilation 1). */
static int32_t blocks_layer(const depthwise_shape *shape) {
    int32_t width = shape->out_dims->w;
    tap_window first, last;
    column_window(shape, 0, &first);
    column_window(shape, width - 1, &last);
    return shape->unrolled && shape->x_first <= 1 && width - shape->x_end <= 1
           && (shape->x_first == 0 || (first.j0 == 1 && first.j1 == 3))
           && (shape->x_end == width || (last.j0 == 0 && last.j1 == 2));
}

/* Whether every group is simple (decode_group's test, once per call). */
static int32_t all_simple(const depthwise_shape *shape, int32_t channels) {
    const mcu_channel_quant *quant = shape->quant;
    for (int32_t c = 0; c < channels; ++c) {
        int32_t bias = shape->bias != NULL ? shape->bias[c] : 0, right = -quant->shift[c];
        uint32_t magnitude = bias < 0 ? 0u - (uint32_t)bias : (uint32_t)bias;
        if (right < 1 || right > 22 || quant->multiplier[c] < 0 || magnitude >= shape->simple_limit) {
            return 0;
        }
    }
    return 1;
}

/* The simple stage of channels first..first+3 (known simple), straight-line. */
MCU_DSP_INLINE void fast_channel(simple_stage *stage, int32_t r, int32_t shift, uint32_t offset) {
    int32_t right = -shift;
    stage->right[r] = right;
    stage->round[r] = (int32_t)(((uint32_t)1 << (right - 1)) + (offset << right));
}

static void fast_stage(const depthwise_shape *shape, int32_t first, simple_stage *stage) {
    const int32_t *shift = shape->quant->shift + first, *multiplier = shape->quant->multiplier + first;
    uint32_t offset = (uint32_t)shape->quant->output_offset;
    stage->multiplier[0] = multiplier[0];
    stage->multiplier[1] = multiplier[1];
    stage->multiplier[2] = multiplier[2];
    stage->multiplier[3] = multiplier[3];
    fast_channel(stage, 0, shift[0], offset);
    fast_channel(stage, 1, shift[1], offset);
    fast_channel(stage, 2, shift[2], offset);
    fast_channel(stage, 3, shift[3], offset);
    stage->low_bytes = shape->low_bytes;
    stage->high_bytes = shape->high_bytes;
}

/* Halfwise sums of column j of `rows` kernel rows (from the group's row i0): (c, c+2) in
 * `even`, (c+1, c+3) in `odd` (|sum| <= 3 * 128 per half). */
MCU_DSP_INLINE void column_sums(const int8_t *w, int32_t j, int32_t rows, int32_t *even, int32_t *odd) {
    int32_t top = mcu_read32(w + 4 * j), next = mcu_read32(w + 12 + 4 * j);
    *even = mcu_sxtab16(mcu_sxtb16(top), next);
    *odd = mcu_sxtab16_ror8(mcu_sxtb16_ror8(top), next);
    if (rows == 3) {
        int32_t last = mcu_read32(w + 24 + 4 * j);
        *even = mcu_sxtab16(*even, last);
        *odd = mcu_sxtab16_ror8(*odd, last);
    }
}

/* bias + input_offset * the sum of a class's weights, channels c..c+3 (SMLABB / SMLATB). */
MCU_DSP_INLINE void class_bias(int32_t even, int32_t odd, int32_t offset, const int32_t bias[4], int32_t out[4]) {
    out[0] = mcu_smlabb(even, offset, bias[0]);
    out[1] = mcu_smlabb(odd, offset, bias[1]);
    out[2] = mcu_smlatb(even, offset, bias[2]);
    out[3] = mcu_smlatb(odd, offset, bias[3]);
}

/* The three biases of the row: bias + input_offset * the weights of the columns in range
 * (|sum| <= 9 * 128 per half: SADD16 exact). */
MCU_DSP_INLINE void row_biases(const depthwise_shape *shape, const int8_t *w, int32_t rows, int32_t first,
                               row_run *run) {
    int32_t even0, odd0, even1, odd1, even2, odd2;
    column_sums(w, 0, rows, &even0, &odd0);
    column_sums(w, 1, rows, &even1, &odd1);
    column_sums(w, 2, rows, &even2, &odd2);
    int32_t left_even = mcu_dw_sadd16(even1, even2), left_odd = mcu_dw_sadd16(odd1, odd2);
    int32_t offset = shape->offset_pair;
    const int32_t zeros[4] = {0, 0, 0, 0}, *bias = shape->bias != NULL ? shape->bias + first : zeros;
    class_bias(left_even, left_odd, offset, bias, run->left);   /* "left": the left border pixel, column 0 missing */
    class_bias(mcu_dw_sadd16(even0, even1), mcu_dw_sadd16(odd0, odd1), offset, bias, run->right);
    class_bias(mcu_dw_sadd16(left_even, even0), mcu_dw_sadd16(left_odd, odd0), offset, bias, run->full);
}

/* The parts of a row_run every row and group shares. */
static void fast_run(const depthwise_shape *shape, row_run *run) {
    int32_t channels = shape->in_dims->c, stride = shape->params->stride_w, pad = shape->params->pad_left;
    run->shape = shape;
    run->any = NULL;
    run->column_step = channels;
    run->row_step = shape->in_dims->w * channels;
    run->x_step = stride * channels;
    run->out_step = mcu_pixel_stride(shape->out_dims);
    run->left_pixel = shape->x_first;
    run->interior = shape->x_end - shape->x_first;
    run->right_pixel = shape->out_dims->w - shape->x_end;
    run->interior_start = (shape->x_first * stride - pad) * channels;
    run->right_start = ((shape->out_dims->w - 1) * stride - pad) * channels;
}

/* The row biases of a group from the weights of its `rows` kernel rows from row i0. */
MCU_DSP_INLINE void group_biases(const depthwise_shape *shape, const int8_t *weights, int32_t rows, int32_t group,
                                 row_run *run) {
    if (rows == 3) {
        row_biases(shape, weights, 3, 4 * group, run);
    } else {
        row_biases(shape, weights, 2, 4 * group, run);
    }
}

/* A group of a layer with some group not simple: its stage decoded with the checks. */
MCU_DSP_NOINLINE void row_group_checked(const depthwise_shape *shape, const int8_t *x, const int8_t *weights,
                                        int32_t rows, int32_t group, row_run *run, int8_t *out) {
    group_stage stage;
    decode_group(shape, 4 * group, &stage);
    run->stage = stage.simple_part;
    run->any = &stage;
    group_biases(shape, weights, rows, group, run);
    if (stage.simple) {
        (rows == 3 ? run_row3 : run_row2)(x, weights, run, out);
    } else {
        run_row_any(x, weights, run, out, rows);
    }
}

/* Channels 4g..4g+3 of one output row whose window has two or three kernel rows in range. */
MCU_DSP_INLINE void row_group_blocks(const depthwise_shape *shape, const tap_window *window, const int8_t *in,
                                     const int8_t *w, int32_t group, row_run *run, int8_t *out) {
    int32_t rows = window->i1 - window->i0;
    const int8_t *weights = w + 12 * window->i0;
    const int8_t *x = in + (window->row_index + window->i0 * run->row_step + 4 * group);   /* input column 0 */
    if (!shape->all_simple) {
        row_group_checked(shape, x, weights, rows, group, run, out + 4 * group);
        return;
    }
    fast_stage(shape, 4 * group, &run->stage);
    group_biases(shape, weights, rows, group, run);
    (rows == 3 ? run_row3 : run_row2)(x, weights, run, out + 4 * group);
}

/* Channels 4g..4g+3 of every pixel of one output row (`out` = the row's first pixel), every
 * tap through the window loop. */
static void row_group(const depthwise_shape *shape, tap_window *window, const int8_t *in, const int8_t *w,
                      int32_t group, int8_t *out) {
    group_stage stage;
    decode_group(shape, 4 * group, &stage);
    pixels_any(shape, window, in, w, group, &stage, 0, shape->out_dims->w, out);
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

/* The output columns x_first..x_end-1 whose window lies inside the input (x_end >= x_first). */
static void interior_columns(depthwise_shape *shape) {
    const mcu_depthwise_params *p = shape->params;
    int32_t span = (shape->w_dims->w - 1) * p->dilation_w, width = shape->out_dims->w;
    int32_t first = (p->pad_left + p->stride_w - 1) / p->stride_w;
    int32_t end = shape->in_dims->w - 1 - span + p->pad_left;   /* x * stride_w <= end */
    end = end < 0 ? 0 : end / p->stride_w + 1;
    shape->x_first = first < width ? first : width;
    shape->x_end = end < shape->x_first ? shape->x_first : (end < width ? end : width);
}

static int32_t byte_pattern(int32_t value) {
    return (int32_t)((uint32_t)(uint8_t)(int8_t)value * 0x01010101u);
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
    depthwise_shape shape = {params, in_dims, w_dims, out_dims, quant, bias, 0, mcu_dsp_reach(taps), 0, 0, 0,
                             0, 0, 0, 0, 0u};
    shape.offset_pair = mcu_dsp_pair(quant->input_offset);
    shape.unrolled = w_dims->h == 3 && w_dims->w == 3 && params->dilation_h == 1 && params->dilation_w == 1;
    shape.low_bytes = byte_pattern(params->activation.min);
    shape.high_bytes = byte_pattern(params->activation.max);
    interior_columns(&shape);
    shape.simple_limit = shape.reach < (1 << 30) ? (uint32_t)((1 << 30) - shape.reach) : 0u;
    shape.blocks = blocks_layer(&shape);
    shape.all_simple = shape.blocks && all_simple(&shape, 4 * groups);
    row_run run;
    fast_run(&shape, &run);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y, out += out_dims->w * mcu_pixel_stride(out_dims)) {
            tap_window window;
            row_window(&shape, n, y, &window);
            for (int32_t g = 0; g < groups; ++g) {
                if (shape.blocks && window.i1 - window.i0 >= 2) {
                    row_group_blocks(&shape, &window, in, w + 4 * g * taps, g, &run, out);
                } else {
                    row_group(&shape, &window, in, w + 4 * g * taps, g, out);
                }
            }
            for (int32_t c = 4 * groups; c < channels; ++c) {
                row_channel(&shape, &window, in, w + 4 * groups * taps + (c - 4 * groups), channels - 4 * groups, c,
                            out);
            }
        }
    }
    return MCU_OK;
}
