/*
 * depthwise_mve.c - mcu_depthwise_conv2d_s8_mve: int8 depthwise convolution, depth
 * multiplier 1, NHWC, any kernel size, stride, dilation and padding, for cores with MVE.
 *
 * Channel groups of eight (G = ceil(C/8), the tail group predicated), 16-bit lanes: per tap
 * one widening load of eight inputs (VLDRB.S16) and of eight weights, VMULLB / VMULLT (even /
 * odd lanes as int32 products) added to two int32 accumulators that start at the bias, the
 * input offset folded into it offline:
 *
 *   acc[c]   = bias'[c] + sum_{i, j} W[c, i, j] * X[y*sh + i*dh - pt, x*sw + j*dw - pl, c]
 *   bias'[c] = bias[c] + input_offset * sum_{i, j} W[c, i, j]      (padding reads -input_offset)
 *
 * Dilation 1 (kH <= MCU_DW_BAND_ROWS), the band path: a ring of kH input rows in scratch,
 * each row stored group-major ([group][band column][8 channels], padded with the zero point
 * on the left / right), so that a tap is always 8 bytes further (post-increment loads, no
 * pointer arithmetic, no bounds tests) and every input row is copied once per pass. Output
 * pixels in pairs share the weight loads: 11 instructions per tap for 16 MACs (3x3 fully
 * unrolled); the last pixel of an odd row alone. Requantization: four int32 lanes at a time
 * (only multipliers and right shifts when every shift is <= -1), narrowed to int16 with
 * saturation, then the offset, the clamp and the store on all eight lanes at once (the
 * saturation keeps every out-of-range value out of [activation min, max], exact).
 * Other shapes (dilation > 1) run pixel by pixel from the input, padding taps reading the
 * zero point.
 *
 * Weights "group major" ([G][kH*kW][8], tail channels 0) and bias' [G][even 4, odd 4]
 * (mcu_runtime_mve.h), prepared offline by mcudeploy (kernels/mve.py).
 *
 * Loop order and the overlap proof (kernels/mve.py, depthwise_overlap). The band path runs
 * when the scratch holds the band of at least one group: G' = ctx->size / (group band)
 * groups per pass, passes over group chunks when G' < G (small images with many channels,
 * whose whole band is above mcudeploy's scratch budget: each pass reads the whole input,
 * so the plan keeps the output below it). Within a pass: per output row, first the
 * input rows it needs that are not yet in the ring are copied, then all its pixels are
 * stored; rows in the ring are never read from the input again, so after row y's stores the
 * input is read only from row y*sh - pt + kH on. Without that scratch (dilation > 1, or not
 * one group's band within mcudeploy's scratch budget) the pixel path: each pixel's groups read, then
 * stored, pixel after pixel.
 */
#include "mcu_mve_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

#define MCU_DW_BAND_ROWS 16   /* the band path's largest kernel height */

typedef struct {
    const mcu_depthwise_params *params;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    const mcu_channel_quant *quant;
    const int32_t *bias;      /* [G][24]: bias', multipliers, shifts (even, odd) */
    const int8_t *weights;    /* [G][kH*kW][8] */
    int32_t right_shifts;     /* every shift <= -1 */
    int32_t taps;             /* kH * kW */
} depthwise_shape;

/* The scales of group g: multipliers and shifts of its even / odd channels (a copy pads
 * the tail group), the two halves of its bias'. */
typedef struct {
    mcu_s32x4 multiplier[2], shift[2], bias[2];
} group_scales;

/* The group's block of the prepared bias array (mcu_runtime_mve.h): 24 int32, bias' /
 * multipliers / shifts, each even channels then odd channels (tail: 0 / 0 / -1). */
#define MCU_DW_GROUP_WORDS 24

static group_scales scales_of(const depthwise_shape *shape, int32_t group) {
    const int32_t *block = shape->bias + group * MCU_DW_GROUP_WORDS;
    group_scales scales;
    for (int32_t half = 0; half < 2; ++half) {
        scales.bias[half] = mcu_vld_s32(block + 4 * half);
        scales.multiplier[half] = mcu_vld_s32(block + 8 + 4 * half);
        scales.shift[half] = mcu_vld_s32(block + 16 + 4 * half);
    }
    return scales;
}

/* The output stage of one group: its scales, the offset and the clamp bounds (int16 lanes). */
typedef struct {
    group_scales scales;
    mcu_s16x8 low, high;
    int32_t offset, right_shifts;
    mcu_pred lanes;
    int32_t full;             /* eight channels: unpredicated stores */
} group_output;

static group_output output_of(const depthwise_shape *shape, int32_t group) {
    const mcu_activation *activation = &shape->params->activation;
    group_output output = {scales_of(shape, group), mcu_vdup_s16(activation->min), mcu_vdup_s16(activation->max),
                           shape->quant->output_offset, shape->right_shifts,
                           mcu_vctp16(shape->in_dims->c - 8 * group), shape->in_dims->c - 8 * group >= 8};
    return output;
}

static inline mcu_s32x4 requantize(const group_output *output, mcu_s32x4 acc, int32_t half) {
    if (output->right_shifts) {
        mcu_s32x4 value = mcu_vqrdmulh_s32(acc, output->scales.multiplier[half]);
        return mcu_vrshl_s32(mcu_vqadd_s32(value, mcu_vsign_s32(value)), output->scales.shift[half]);
    }
    mcu_mve_scale scale = mcu_mve_scale_of(output->scales.multiplier[half], output->scales.shift[half]);
    return mcu_mve_requantize(acc, &scale);
}

/* Requantize and store the eight channels of one pixel from its even / odd sums (bias'
 * included): int16 saturation, then offset and clamp on eight lanes. */
static inline void store_group(const group_output *output, mcu_s32x4 even, mcu_s32x4 odd, int8_t *out) {
    mcu_s16x8 value = mcu_vqmovn_pair_s32(requantize(output, even, 0), requantize(output, odd, 1));
    value = mcu_vmin_s16(mcu_vmax_s16(mcu_vqadd_n_s16(value, output->offset), output->low), output->high);
    if (output->full) {
        mcu_vst_s16_as_s8(out, value);
    } else {
        mcu_vst_s16_as_s8_p(out, value, output->lanes);
    }
}

/* ---- the band path ---------------------------------------------------------------------- */

/* Band columns: every window of the output row, (W_out - 1) * stride + kW. */
static int32_t band_width(const mcu_depthwise_params *params, const mcu_dims *w_dims, const mcu_dims *out_dims) {
    return MCU_DEPTHWISE_MVE_BAND_WIDTH(out_dims->w, params->stride_w, w_dims->w);
}

static int32_t has_band(const mcu_depthwise_params *params, const mcu_dims *w_dims) {
    return params->dilation_h == 1 && params->dilation_w == 1 && w_dims->h <= MCU_DW_BAND_ROWS;
}

/* Input row in_y of groups first..first+count-1 into `row` (count consecutive group rows):
 * the data columns only, the padding columns hold the zero point since the pass began (a
 * row outside the input: every column the zero point). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void fill_row(const depthwise_shape *shape, const int8_t *in, int32_t batch, int32_t in_y, int32_t first,
                     int32_t count, int8_t *row) {
    const mcu_dims *in_dims = shape->in_dims;
    int32_t width = band_width(shape->params, shape->w_dims, shape->out_dims), left = shape->params->pad_left;
    int32_t columns = in_dims->w < width - left ? in_dims->w : width - left, channels = in_dims->c;
    if (in_y < 0 || in_y >= in_dims->h) {
        mcu_mve_fill(row, -shape->quant->input_offset, count * width * 8);
        return;
    }
    const int8_t *source = in + ((batch * in_dims->h + in_y) * in_dims->w) * channels + 8 * first;
    for (int32_t q = 0; q < count; ++q, row += width * 8, source += 8) {
        const int8_t *from = source;
        int8_t *to = row + left * 8;
        if (channels - 8 * (first + q) >= 8) {
            for (int32_t x = columns; x > 0; --x, from += channels, to += 8) {
                mcu_vst_s16_as_s8(to, mcu_vld_s8_s16(from));
            }
        } else {
            mcu_pred lanes = mcu_vctp16(channels - 8 * (first + q));
            for (int32_t x = columns; x > 0; --x, from += channels, to += 8) {
                mcu_vst_s16_as_s8(to, mcu_vld_s8_s16_z(from, lanes));
            }
        }
    }
}

#include "mcu_mve_depthwise_taps.h"

#if MCU_MVE_NATIVE
/* band_row for `groups` consecutive full groups whose shifts are all <= -1, from the band
 * rows of the first (group q's rows are q * group_bytes further): one set-up per output row,
 * per group two bias loads, the output stage in asm (out: the first group's channel 0 of the
 * row's first pixel). */
__attribute__((noinline)) static void band_row_right(const depthwise_shape *shape, const int8_t *const *rows,
                                                     int32_t first, int32_t groups, int32_t group_bytes,
                                                     int8_t *out) {
    int32_t kernel_h = shape->w_dims->h, kernel_w = shape->w_dims->w, width = shape->out_dims->w;
    int32_t step = shape->params->stride_w * 8, pixel_stride = mcu_pixel_stride(shape->out_dims);
    int32_t offset = shape->quant->output_offset, low = shape->params->activation.min;
    int32_t high = shape->params->activation.max, group_weights = shape->taps * 8;
    const int8_t *w = shape->weights + first * group_weights;
    const int32_t *block = shape->bias + first * MCU_DW_GROUP_WORDS;
    out += 8 * first;
    for (int32_t q = 0; q < groups; ++q, w += group_weights, block += MCU_DW_GROUP_WORDS, out += 8) {
        mcu_s32x4 even = mcu_vld_s32(block), odd = mcu_vld_s32(block + 4);
        int32_t pixel = 0, band_offset = q * group_bytes;
        int8_t *target = out;
        for (; pixel + 1 < width; pixel += 2, target += 2 * pixel_stride, band_offset += 2 * step) {
            mcu_s32x4 sums[4] = {even, odd, even, odd};
            pair_taps(rows, kernel_h, kernel_w, band_offset, step, w, sums);
            store_pair_right(block, sums, offset, low, high, target, target + pixel_stride);
        }
        if (pixel < width) {
            mcu_s32x4 sums[2] = {even, odd};
            single_taps(rows, kernel_h, kernel_w, band_offset, w, sums);
            store_single_right(block, sums, offset, low, high, target);
        }
    }
}
#endif

/* Output row of group `group` from the band rows `rows` (kH pointers, band column 0). */
static void band_row(const depthwise_shape *shape, const int8_t *const *rows, int32_t group, int8_t *out) {
    int32_t kernel_h = shape->w_dims->h, kernel_w = shape->w_dims->w, width = shape->out_dims->w;
    int32_t step = shape->params->stride_w * 8, pixel_stride = mcu_pixel_stride(shape->out_dims);
    const int8_t *w = shape->weights + group * shape->taps * 8;
    out += 8 * group;
    group_output output = output_of(shape, group);
    int32_t pixel = 0;
    for (; pixel + 1 < width; pixel += 2, out += 2 * pixel_stride) {
        mcu_s32x4 even = output.scales.bias[0], odd = output.scales.bias[1], sums[4] = {even, odd, even, odd};
        pair_taps(rows, kernel_h, kernel_w, pixel * step, step, w, sums);
        store_group(&output, sums[0], sums[1], out);
        store_group(&output, sums[2], sums[3], out + pixel_stride);
    }
    if (pixel < width) {
        mcu_s32x4 sums[2] = {output.scales.bias[0], output.scales.bias[1]};
        single_taps(rows, kernel_h, kernel_w, pixel * step, w, sums);
        store_group(&output, sums[0], sums[1], out);
    }
}

/* Groups first..first+count-1 of every output row of batch `batch`, the input rows in a
 * ring of kH slots (slot of input row r: r mod kH; a slot holds `count` group rows). */
static void band_pass(const depthwise_shape *shape, const int8_t *in, int32_t batch, int32_t first, int32_t count,
                      int8_t *band, int8_t *out) {
    const mcu_depthwise_params *p = shape->params;
    int32_t kernel_h = shape->w_dims->h, group_bytes = band_width(p, shape->w_dims, shape->out_dims) * 8;
    int32_t loaded[MCU_DW_BAND_ROWS];
    const int8_t *rows[MCU_DW_BAND_ROWS];
    int32_t row_bytes = shape->out_dims->w * mcu_pixel_stride(shape->out_dims);
    for (int32_t slot = 0; slot < kernel_h; ++slot) {
        loaded[slot] = INT32_MIN;
    }
    mcu_mve_fill(band, -shape->quant->input_offset, kernel_h * count * group_bytes);
    for (int32_t y = 0; y < shape->out_dims->h; ++y, out += row_bytes) {
        int32_t slots[MCU_DW_BAND_ROWS];
        for (int32_t i = 0; i < kernel_h; ++i) {
            int32_t in_y = y * p->stride_h - p->pad_top + i, slot = (int32_t)((uint32_t)(in_y + p->pad_top) % kernel_h);
            if (loaded[slot] != in_y && (in_y >= 0 || loaded[slot] != INT32_MIN)) {   /* the fill made it padding */
                fill_row(shape, in, batch, in_y, first, count, band + slot * count * group_bytes);
                loaded[slot] = in_y;
            }
            slots[i] = slot;
        }
        int32_t q = 0;
#if MCU_MVE_NATIVE
        if (shape->right_shifts) {   /* the full groups in one call */
            int32_t full = (shape->in_dims->c - 8 * first) / 8 < count ? (shape->in_dims->c - 8 * first) / 8 : count;
            for (int32_t i = 0; i < kernel_h; ++i) {
                rows[i] = band + slots[i] * count * group_bytes;
            }
            band_row_right(shape, rows, first, full, group_bytes, out);
            q = full;
        }
#endif
        for (; q < count; ++q) {
            for (int32_t i = 0; i < kernel_h; ++i) {
                rows[i] = band + (slots[i] * count + q) * group_bytes;
            }
            band_row(shape, rows, first + q, out);
        }
    }
}

/* ---- any other shape: pixel by pixel ----------------------------------------------------- */

/* even / odd sums of group `group` of one output pixel over its in-bounds taps (padding taps
 * multiply the zero point). */
static void pixel_taps(const depthwise_shape *shape, const int8_t *in, int32_t batch, int32_t y, int32_t x,
                       int32_t group, mcu_s32x4 sums[2]) {
    const mcu_depthwise_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, c = 8 * group;
    mcu_pred lanes = mcu_vctp16(channels - c);
    mcu_s16x8 pad = mcu_vdup_s16(-shape->quant->input_offset);
    const int8_t *weights = shape->weights + group * shape->taps * 8;
    for (int32_t i = 0; i < shape->w_dims->h; ++i) {
        int32_t in_y = y * p->stride_h - p->pad_top + i * p->dilation_h;
        for (int32_t j = 0; j < shape->w_dims->w; ++j, weights += 8) {
            int32_t in_x = x * p->stride_w - p->pad_left + j * p->dilation_w;
            int32_t inside = in_y >= 0 && in_y < in_dims->h && in_x >= 0 && in_x < in_dims->w;
            mcu_s16x8 values = inside ? mcu_vld_s8_s16_z(in + ((batch * in_dims->h + in_y) * in_dims->w + in_x)
                                                                   * channels + c, lanes)
                                      : pad;
            mcu_s16x8 taps = mcu_vld_s8_s16(weights);
            sums[0] = mcu_vadd_s32(sums[0], mcu_vmullb_s16(values, taps));
            sums[1] = mcu_vadd_s32(sums[1], mcu_vmullt_s16(values, taps));
        }
    }
}

static void pixel_pass(const depthwise_shape *shape, const int8_t *in, int32_t batch, int8_t *out) {
    const mcu_dims *out_dims = shape->out_dims;
    int32_t groups = (shape->in_dims->c + 7) / 8, pixel_stride = mcu_pixel_stride(out_dims);
    for (int32_t y = 0; y < out_dims->h; ++y) {
        for (int32_t x = 0; x < out_dims->w; ++x, out += pixel_stride) {
            for (int32_t group = 0; group < groups; ++group) {
                group_output output = output_of(shape, group);
                mcu_s32x4 sums[2] = {output.scales.bias[0], output.scales.bias[1]};
                pixel_taps(shape, in, batch, y, x, group, sums);
                store_group(&output, sums[0], sums[1], out + 8 * group);
            }
        }
    }
}

int32_t mcu_depthwise_conv2d_s8_mve_scratch_size(const mcu_depthwise_params *params, const mcu_dims *in_dims,
                                                 const mcu_dims *w_dims, const mcu_dims *out_dims) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims) || !mcu_out_dims_valid(out_dims)
        || !has_band(params, w_dims)) {
        return 0;   /* the pixel path, without scratch */
    }
    return MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES(out_dims->w, params->stride_w, w_dims->h, w_dims->w, in_dims->c);
}

mcu_status mcu_depthwise_conv2d_s8_mve(const mcu_context *ctx, const mcu_depthwise_params *params,
                                       const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                       const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                       const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    if (!mcu_depthwise_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out) || bias == NULL) {
        return MCU_ERR_ARG;
    }
    depthwise_shape shape = {params, in_dims, w_dims, out_dims, quant, bias, w,
                             mcu_mve_all_right_shifts(quant->shift, in_dims->c), w_dims->h * w_dims->w};
    int32_t groups = (in_dims->c + 7) / 8;
    int32_t needed = mcu_depthwise_conv2d_s8_mve_scratch_size(params, in_dims, w_dims, out_dims);
    int32_t chunk = needed > 0 && ctx != NULL && ctx->buffer != NULL ? ctx->size / (needed / groups) : 0;
    chunk = chunk < groups ? chunk : groups;   /* groups per band pass; 0: the pixel path */
    int32_t batch_bytes = out_dims->h * out_dims->w * mcu_pixel_stride(out_dims);
    for (int32_t n = 0; n < out_dims->n; ++n, out += batch_bytes) {
        for (int32_t first = 0; chunk > 0 && first < groups; first += chunk) {
            int32_t count = groups - first < chunk ? groups - first : chunk;
            band_pass(&shape, in, n, first, count, (int8_t *)ctx->buffer, out);
        }
        if (chunk == 0) {
            pixel_pass(&shape, in, n, out);
        }
    }
    return MCU_OK;
}
