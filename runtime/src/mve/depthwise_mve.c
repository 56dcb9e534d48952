/*
 * depthwise_mve.c - mcu_depthwise_conv2d_s8_mve: int8 depthwise convolution, depth
 * multiplier 1, NHWC, any kernel size, stride, dilation and padding, for cores with MVE.
 *
 * Eight channels per vector in 16-bit lanes: per tap one widening load of eight inputs
 * (VLDRB.S16; a tap in the padding reads the input zero point instead) and one of eight
 * weights, then VMULLB / VMULLT (even / odd lanes as int32 products) added to two int32
 * accumulator vectors, with the input offset folded into the bias offline:
 *
 *   acc[c]   = bias'[c] + sum_{i, j} W[c, i, j] * X[y*sh + i*dh - pt, x*sw + j*dw - pl, c]
 *   bias'[c] = bias[c] + input_offset * sum_{i, j} W[c, i, j]      (padding reads -input_offset)
 *
 * 3x3 kernels (dilation 1) copy the three input rows of each output row into a scratch
 * band padded with the zero point, so that every window lies inside; then groups of eight
 * channels (their scales loaded once per row), and the row's pixels in pairs that share the
 * weight loads (13 instructions per 16 MACs). Other kernels run pixel by pixel, padding taps
 * multiplying the zero point. The even and odd channels are
 * requantized four at a time (scales deinterleaved by VLD2; only multipliers and right
 * shifts when every shift is <= -1), narrowed back (VMOVNB / VMOVNT) and stored as eight
 * bytes. The C % 8 tail is predicated. Weights: [kH*kW, C] ("taps major", mcu_runtime_mve.h).
 *
 * Access order (for the overlap proof): a row's stores are interleaved with its own reads
 * but precede every read of the next rows: units of one output row, reads not first
 * (kernels/overlap_blocked.py).
 */
#include "mcu_mve_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

typedef struct {
    const mcu_depthwise_params *params;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    const mcu_channel_quant *quant;
    const int32_t *bias;      /* bias' */
    int32_t right_shifts;     /* every shift <= -1 */
} depthwise_shape;

typedef struct {
    int32_t i0, i1, j0, j1;   /* in-bounds taps */
    int32_t origin;           /* input index of tap (0, 0), channel 0 */
} tap_window;

static tap_window window_of(const depthwise_shape *shape, int32_t pixel) {
    const mcu_depthwise_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims, *out_dims = shape->out_dims;
    int32_t x = pixel % out_dims->w, y = (pixel / out_dims->w) % out_dims->h, batch = pixel / (out_dims->w * out_dims->h);
    int32_t in_y = y * p->stride_h - p->pad_top, in_x = x * p->stride_w - p->pad_left;
    tap_window window = {mcu_first_tap(in_y, p->dilation_h), mcu_end_tap(in_y, p->dilation_h, shape->w_dims->h, in_dims->h),
                         mcu_first_tap(in_x, p->dilation_w), mcu_end_tap(in_x, p->dilation_w, shape->w_dims->w, in_dims->w),
                         ((batch * in_dims->h + in_y) * in_dims->w + in_x) * in_dims->c};
    return window;
}

/* sums[0..1] += even / odd channel products of channels c..c+7 over every tap of one pixel
 * (taps in the padding multiply the zero point). */
static void pixel_taps(const depthwise_shape *shape, const tap_window *window, const int8_t *in, const int8_t *w,
                       int32_t c, mcu_pred lanes, mcu_s32x4 sums[2]) {
    const mcu_depthwise_params *p = shape->params;
    int32_t channels = shape->in_dims->c, kernel_h = shape->w_dims->h, kernel_w = shape->w_dims->w;
    int32_t row_step = p->dilation_h * shape->in_dims->w * channels, column_step = p->dilation_w * channels;
    int32_t i0 = window->i0, i1 = window->i1, j0 = window->j0, j1 = window->j1;
    mcu_s16x8 pad = mcu_vdup_s16(-shape->quant->input_offset);
    mcu_s32x4 even = sums[0], odd = sums[1];
    const int8_t *weights = w + c;
    for (int32_t i = 0; i < kernel_h; ++i) {
        int32_t inside_row = i >= i0 && i < i1;
        const int8_t *x = in + (window->origin + c + (inside_row ? i * row_step : 0));
        for (int32_t j = 0; j < kernel_w; ++j, weights += channels, x += column_step) {
            mcu_s16x8 taps = mcu_vld_s8_s16_z(weights, lanes);
            mcu_s16x8 values = inside_row && j >= j0 && j < j1 ? mcu_vld_s8_s16_z(x, lanes) : pad;
            even = mcu_vadd_s32(even, mcu_vmullb_s16(values, taps));
            odd = mcu_vadd_s32(odd, mcu_vmullt_s16(values, taps));
        }
    }
    sums[0] = even;
    sums[1] = odd;
}

/* sums[0..3] += even / odd products of two adjacent pixels (`x`, `x + step`) over all nine
 * taps of their in-bounds 3x3 windows, eight channels. */
/* The same with predicated loads (a group of fewer than eight channels; kept out of line so
 * that it does not weigh on the registers of the full-group loop). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void pair_3x3_lanes(const int8_t *x, int32_t step, int32_t column_step, int32_t row_step, const int8_t *w,
                     int32_t channels, mcu_pred lanes, mcu_s32x4 sums[4]) {
    mcu_s32x4 a = sums[0], b = sums[1], c = sums[2], d = sums[3];
    for (int32_t i = 0; i < 3; ++i, x += row_step, w += 3 * channels) {
        for (int32_t j = 0; j < 3; ++j) {
            mcu_s16x8 weights = mcu_vld_s8_s16_z(w + j * channels, lanes);
            mcu_s16x8 first = mcu_vld_s8_s16_z(x + j * column_step, lanes), second = mcu_vld_s8_s16_z(x + step + j * column_step, lanes);
            a = mcu_vadd_s32(a, mcu_vmullb_s16(first, weights));
            b = mcu_vadd_s32(b, mcu_vmullt_s16(first, weights));
            c = mcu_vadd_s32(c, mcu_vmullb_s16(second, weights));
            d = mcu_vadd_s32(d, mcu_vmullt_s16(second, weights));
        }
    }
    sums[0] = a;
    sums[1] = b;
    sums[2] = c;
    sums[3] = d;
}

#if MCU_MVE_NATIVE
/* Hand-scheduled: 14 instructions per tap for 16 MACs (GCC 12 spills the four sums). */
static void pair_3x3(const int8_t *x, int32_t step, int32_t column_step, int32_t row_step, const int8_t *w,
                     int32_t channels, mcu_s32x4 sums[4]) {
    mcu_s32x4 a = sums[0], b = sums[1], c = sums[2], d = sums[3];
    const int8_t *second = x + step;
    int32_t rows = 3, back = row_step - 3 * column_step;
#define MCU_DW_TAP                                   \
    "vldrb.s16 q4, [%[w]]\n\t"                     \
    "vldrb.s16 q5, [%[x]]\n\t"                     \
    "vldrb.s16 q6, [%[y]]\n\t"                     \
    "vmullb.s16 q7, q5, q4\n\t"                    \
    "vadd.i32 %q[a], %q[a], q7\n\t"                \
    "vmullt.s16 q7, q5, q4\n\t"                    \
    "vadd.i32 %q[b], %q[b], q7\n\t"                \
    "vmullb.s16 q7, q6, q4\n\t"                    \
    "vadd.i32 %q[c], %q[c], q7\n\t"                \
    "vmullt.s16 q7, q6, q4\n\t"                    \
    "vadd.i32 %q[d], %q[d], q7\n\t"                \
    "add %[w], %[w], %[channels]\n\t"              \
    "add %[x], %[x], %[cs]\n\t"                    \
    "add %[y], %[y], %[cs]\n\t"
    __asm__ volatile(
        "1:\n\t" MCU_DW_TAP MCU_DW_TAP MCU_DW_TAP
        "add %[x], %[x], %[back]\n\t"
        "add %[y], %[y], %[back]\n\t"
        "subs %[rows], %[rows], #1\n\t"
        "bne 1b\n\t"
        : [a] "+w"(a), [b] "+w"(b), [c] "+w"(c), [d] "+w"(d), [x] "+r"(x), [y] "+r"(second), [w] "+r"(w),
          [rows] "+r"(rows)
        : [channels] "r"(channels), [cs] "r"(column_step), [back] "r"(back)
        : "q4", "q5", "q6", "q7", "cc", "memory");
#undef MCU_DW_TAP
    sums[0] = a;
    sums[1] = b;
    sums[2] = c;
    sums[3] = d;
}
#else
static void pair_3x3(const int8_t *x, int32_t step, int32_t column_step, int32_t row_step, const int8_t *w,
                     int32_t channels, mcu_s32x4 sums[4]) {
    pair_3x3_lanes(x, step, column_step, row_step, w, channels, mcu_vctp16(8), sums);
}
#endif

/* Multipliers, shifts and biases of channels c..c+7, even and odd lanes (a copy pads the
 * tail group). */
typedef struct {
    mcu_s32x4 multiplier[2], shift[2], bias[2];
} group_scales;

static group_scales scales_of(const depthwise_shape *shape, int32_t c, int32_t count) {
    const mcu_channel_quant *quant = shape->quant;
    const int32_t *m = quant->multiplier + c, *s = quant->shift + c, *b = shape->bias + c;
    int32_t multiplier[8], shift[8], bias[8];
    if (count < 8) {
        for (int32_t r = 0; r < 8; ++r) {
            multiplier[r] = r < count ? m[r] : 0;
            shift[r] = r < count ? s[r] : -1;
            bias[r] = r < count ? b[r] : 0;
        }
        m = multiplier;
        s = shift;
        b = bias;
    }
    group_scales scales;
    mcu_vld2_s32(m, &scales.multiplier[0], &scales.multiplier[1]);
    mcu_vld2_s32(s, &scales.shift[0], &scales.shift[1]);
    mcu_vld2_s32(b, &scales.bias[0], &scales.bias[1]);
    return scales;
}

/* Requantize and store eight channels of one pixel from its even / odd sums (bias' added). */
static void store_group(const depthwise_shape *shape, const group_scales *scales, const mcu_s32x4 sums[2],
                        mcu_pred lanes, int8_t *out) {
    int32_t offset = shape->quant->output_offset;
    mcu_s32x4 low = mcu_vdup_s32(shape->params->activation.min), high = mcu_vdup_s32(shape->params->activation.max);
    mcu_s32x4 values[2];
    for (int32_t half = 0; half < 2; ++half) {
        mcu_s32x4 acc = mcu_vadd_s32(sums[half], scales->bias[half]);
        if (shape->right_shifts) {
            values[half] = mcu_mve_output_right(acc, scales->multiplier[half], scales->shift[half], offset, low, high);
        } else {
            mcu_mve_scale scale = mcu_mve_scale_of(scales->multiplier[half], scales->shift[half]);
            values[half] = mcu_mve_output(acc, &scale, offset, low, high);
        }
    }
    mcu_vst_s16_as_s8_p(out, mcu_vmovn_pair_s32(values[0], values[1]), lanes);
}

/* Scratch layout of the 3x3 path: the three input rows one output row reads, padded with
 * the zero point on the left (pad_left) and right, to max(W_out * stride + 3, W_in + pad_left)
 * pixels: every window, also the second one of an odd row's last pair, then lies inside. */
static int32_t band_width(const mcu_depthwise_params *params, const mcu_dims *in_dims, const mcu_dims *out_dims) {
    return MCU_DEPTHWISE_MVE_BAND_WIDTH(out_dims->w, params->stride_w, in_dims->w, params->pad_left);
}

static void copy_band(const depthwise_shape *shape, const int8_t *in, int32_t batch, int32_t y, int8_t *band) {
    const mcu_depthwise_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, width = band_width(p, in_dims, shape->out_dims), left = p->pad_left * channels;
    int32_t row_bytes = width * channels, data = in_dims->w * channels, pad = -shape->quant->input_offset;
    for (int32_t i = 0; i < 3; ++i, band += row_bytes) {
        int32_t in_y = y * p->stride_h - p->pad_top + i;
        if (in_y < 0 || in_y >= in_dims->h) {
            mcu_mve_fill(band, pad, row_bytes);
            continue;
        }
        mcu_mve_fill(band, pad, left);
        mcu_mve_copy(band + left, in + (batch * in_dims->h + in_y) * data, data);
        mcu_mve_fill(band + left + data, pad, row_bytes - left - data);
    }
}

/* 3x3, dilation 1, through the padded band: every pixel of the row in pairs. */
static void row_3x3(const depthwise_shape *shape, const int8_t *band, const int8_t *w, int8_t *out) {
    int32_t channels = shape->in_dims->c, width = shape->out_dims->w, stride = shape->params->stride_w * channels;
    int32_t row_step = band_width(shape->params, shape->in_dims, shape->out_dims) * channels;
    int32_t pixel_stride = mcu_pixel_stride(shape->out_dims);
    for (int32_t c = 0; c < channels; c += 8) {
        int32_t count = channels - c < 8 ? channels - c : 8;
        mcu_pred lanes = mcu_vctp16(count);
        group_scales scales = scales_of(shape, c, count);
        const int8_t *x = band + c;
        for (int32_t pixel = 0; pixel < width; pixel += 2, x += 2 * stride) {
            mcu_s32x4 sums[4] = {mcu_vdup_s32(0), mcu_vdup_s32(0), mcu_vdup_s32(0), mcu_vdup_s32(0)};
            if (count == 8) {
                pair_3x3(x, stride, channels, row_step, w + c, channels, sums);
            } else {
                pair_3x3_lanes(x, stride, channels, row_step, w + c, channels, lanes, sums);
            }
            store_group(shape, &scales, sums, lanes, out + pixel * pixel_stride + c);
            if (pixel + 1 < width) {
                store_group(shape, &scales, sums + 2, lanes, out + (pixel + 1) * pixel_stride + c);
            }
        }
    }
}

int32_t mcu_depthwise_conv2d_s8_mve_scratch_size(const mcu_depthwise_params *params, const mcu_dims *in_dims,
                                                 const mcu_dims *w_dims, const mcu_dims *out_dims) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_out_dims_valid(out_dims) || w_dims == NULL || w_dims->h != 3
        || w_dims->w != 3 || params->dilation_h != 1 || params->dilation_w != 1) {
        return 0;
    }
    return MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES(out_dims->w, params->stride_w, in_dims->w, params->pad_left,
                                                     in_dims->c);
}

mcu_status mcu_depthwise_conv2d_s8_mve(const mcu_context *ctx, const mcu_depthwise_params *params,
                                       const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                       const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                       const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (!mcu_depthwise_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out) || bias == NULL) {
        return MCU_ERR_ARG;
    }
    depthwise_shape shape = {params, in_dims, w_dims, out_dims, quant, bias,
                             mcu_mve_all_right_shifts(quant->shift, in_dims->c)};
    int32_t needed = mcu_depthwise_conv2d_s8_mve_scratch_size(params, in_dims, w_dims, out_dims);
    if (needed > 0 && (ctx == NULL || ctx->buffer == NULL || ctx->size < needed)) {
        return MCU_ERR_SCRATCH;
    }
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y, out += out_dims->w * mcu_pixel_stride(out_dims)) {
            if (needed > 0) {
                copy_band(&shape, in, n, y, (int8_t *)ctx->buffer);
                row_3x3(&shape, (const int8_t *)ctx->buffer, w, out);
                continue;
            }
            for (int32_t x = 0; x < out_dims->w; ++x) {
                tap_window window = window_of(&shape, (n * out_dims->h + y) * out_dims->w + x);
                for (int32_t c = 0; c < in_dims->c; c += 8) {
                    int32_t count = in_dims->c - c < 8 ? in_dims->c - c : 8;
                    mcu_pred lanes = mcu_vctp16(count);
                    group_scales scales = scales_of(&shape, c, count);
                    mcu_s32x4 sums[2] = {mcu_vdup_s32(0), mcu_vdup_s32(0)};
                    pixel_taps(&shape, &window, in, w, c, lanes, sums);
                    store_group(&shape, &scales, sums, lanes, out + x * mcu_pixel_stride(out_dims) + c);
                }
            }
        }
    }
    return MCU_OK;
}
