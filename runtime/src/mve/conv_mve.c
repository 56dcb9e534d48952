/*
 * conv_mve.c - mcu_conv2d_s8_mve: int8 convolution (groups = 1), NHWC, for cores with the
 * M-profile Vector Extension (Helium: Cortex-M55, M85).
 *
 * Two output pixels at a time: im2col copies each pixel's receptive field, K = kH*kW*C raw
 * int8 values in the weights' (i, j, c) order, into an int8 column of Kp = ceil16(K) bytes
 * (padding taps = the input zero point; the K..Kp tail is left as it is, its weights are 0):
 * an inside window whose kernel rows are whole 16-byte steps (dilation_w 1, kW*C % 16 == 0:
 * ResNet's 3x3 convs) by a DLS/LE loop of unpredicated copies from its corner (advanced pixel
 * by pixel, no division), other windows by MVE copies of whole kernel rows or taps (one
 * predicated copy per kernel row when a row is at most 16 bytes); then
 * 2 columns x 4 output channels per block, 8 VMLADAVA.S8 per 16 k (mcu_mve_gemm.h, the pair
 * loop of mcu_mve_gemm_packed: the scales of each block in one packed block of bias',
 * multipliers and shifts):
 *
 *   acc[p, o] = bias'[o] + sum_k W[o, k] * X_p[k],   bias'[o] = bias[o] + input_offset * sum_k W[o, k]
 *   Y[p, o]   = clamp(mbqm(acc, multiplier[o], shift[o]) + output_offset)     (4 channels per vector)
 *
 * Every weight row is read once per pixel pair (each 16-byte weight load feeds 2 VMLADAVA).
 *
 * A pointwise conv (1x1, stride 1, no padding) reads its input rows in place, without a
 * copy: with C % 16 != 0 a row's Kp = ceil16(C) bytes run into the next pixel, multiplied by
 * the zero padding of the weight rows (so a C = 8 conv costs no copy, only the padded MACs);
 * the last pair, whose rows would pass the tensor's end, goes through the columns. Weights:
 * quad rows (mcu_runtime_mve.h); bias: bias' (folded offline, mcudeploy kernels/mve.py), for
 * every conv but the pointwise one packed with the multipliers and shifts by block of four
 * channels (mcu_runtime_mve.h).
 *
 * Out c_stride (mcu_runtime.h): output pixel p at out + p * c_stride.
 *
 * mcu_conv2d_s8_mve_prechecked skips the argument checks, which mcudeploy's code generator
 * makes at generation time (a 1x1 conv of one pixel spent half its instructions on them).
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
    /* the inside windows whose kernel rows are whole 16-byte steps (dilation_w 1, kW*C % 16 == 0,
     * else steps = 0): output x in [x_low, x_low + x_span], y in [y_low, y_low + y_span]; a
     * window's kernel row i at its corner + i * row_step */
    int32_t steps, jump;    /* jump = row_step - 16 * steps */
    int32_t x_low, x_span, y_low, y_span;
} conv_shape;

/* The output coordinates [low, low + span] whose windows start in the input's [0, last]
 * (span < 0: none). */
static void inside_range(int32_t last, int32_t stride, int32_t pad, int32_t *low, int32_t *span) {
    *low = (pad + stride - 1) / stride;
    *span = last < 0 ? -1 : (last + pad) / stride - *low;
}

static conv_shape shape_of(const mcu_conv_params *params, const mcu_dims *in_dims, const mcu_dims *w_dims,
                           const mcu_dims *out_dims, int32_t pad) {
    int32_t depth = w_dims->h * w_dims->w * w_dims->c, taps_row = w_dims->w * in_dims->c;
    conv_shape shape = {params, in_dims, w_dims, out_dims, depth, mcu_mve_row_length(depth), pad, taps_row / 16,
                        params->dilation_h * in_dims->w * in_dims->c - taps_row / 16 * 16, 0, 0, 0, 0};
    inside_range(in_dims->w - w_dims->w, params->stride_w, params->pad_left, &shape.x_low, &shape.x_span);
    inside_range(in_dims->h - 1 - (w_dims->h - 1) * params->dilation_h, params->stride_h, params->pad_top,
                 &shape.y_low, &shape.y_span);
    if (params->dilation_w != 1 || taps_row % 16 != 0 || shape.x_span < 0 || shape.y_span < 0) {
        shape.steps = 0;
    }
    return shape;
}

/* An output pixel's coordinates and its window's corner (the input byte of its first tap,
 * outside the input for a border window), advanced one pixel at a time. */
typedef struct {
    int32_t x, y, batch, corner;
} pixel_at;

static int32_t corner_of(const conv_shape *shape, const pixel_at *at) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    return ((at->batch * in_dims->h + at->y * p->stride_h - p->pad_top) * in_dims->w + at->x * p->stride_w
            - p->pad_left) * in_dims->c;
}

static inline void next_pixel(pixel_at *at, const conv_shape *shape) {
    at->corner += shape->params->stride_w * shape->in_dims->c;
    if (++at->x == shape->out_dims->w) {
        at->x = 0;
        if (++at->y == shape->out_dims->h) {
            at->y = 0;
            ++at->batch;
        }
        at->corner = corner_of(shape, at);
    }
}

/* Copy / fill `count` bytes: whole 16-byte steps unpredicated, the last count % 16 bytes
 * with one predicated step. */
static inline void copy_bytes(int8_t *target, const int8_t *source, int32_t count) {
    for (int32_t steps = count >> 4; steps > 0; --steps, source += 16, target += 16) {
        mcu_vst_s8(target, mcu_vld_s8(source));
    }
    if ((count & 15) != 0) {
        mcu_pred lanes = mcu_vctp8(count & 15);
        mcu_vst_s8_p(target, mcu_vld_s8_z(source, lanes), lanes);
    }
}

static inline void fill_bytes(int8_t *target, mcu_s8x16 values, int32_t count) {
    for (int32_t steps = count >> 4; steps > 0; --steps, target += 16) {
        mcu_vst_s8(target, values);
    }
    if ((count & 15) != 0) {
        mcu_vst_s8_p(target, values, mcu_vctp8(count & 15));
    }
}

/* A window inside the input with dilation_w 1: kH kernel rows of kW*C contiguous bytes
 * each, one predicated copy per row when a row is at most 16 bytes (first layers, C = 1..5). */
static void inside_field(const conv_shape *shape, const int8_t *source, int32_t taps_row, int8_t *cursor) {
    int32_t row_step = shape->params->dilation_h * shape->in_dims->w * shape->in_dims->c;
    int32_t rows = shape->w_dims->h;
    if (taps_row <= 16) {
        mcu_pred lanes = mcu_vctp8(taps_row);
        for (int32_t i = 0; i < rows; ++i, cursor += taps_row, source += row_step) {
            mcu_vst_s8_p(cursor, mcu_vld_s8_z(source, lanes), lanes);
        }
        return;
    }
    for (int32_t i = 0; i < rows; ++i, cursor += taps_row, source += row_step) {
        copy_bytes(cursor, source, taps_row);
    }
}

/* An inside window of kH kernel rows of `steps` whole 16-byte steps each, from `source` (the
 * rows `jump` bytes apart after a row's steps) into `column`; geometry = {steps, jump}. */
#if MCU_MVE_NATIVE
__attribute__((naked, noinline)) static void copy_window(__attribute__((unused)) int8_t *column,
                                                         __attribute__((unused)) const int8_t *source,
                                                         __attribute__((unused)) int32_t rows,
                                                         __attribute__((unused)) const int32_t *geometry) {
    __asm__ volatile(
        "push {r4, lr}\n\t" "ldrd r4, r3, [r3]\n"
        "1:\n\t" "dls lr, r4\n"
        "2:\n\t" "vldrb.8 q0, [r1], #16\n\t" "vstrb.8 q0, [r0], #16\n\t" "le lr, 2b\n\t"
        "add r1, r1, r3\n\t" "subs r2, r2, #1\n\t" "bne 1b\n\t" "pop {r4, pc}\n\t");
}
#else
static void copy_window(int8_t *column, const int8_t *source, int32_t rows, const int32_t *geometry) {
    for (; rows > 0; --rows, source += geometry[1]) {
        for (int32_t k = geometry[0]; k > 0; --k, source += 16, column += 16) {
            mcu_vst_s8(column, mcu_vld_s8(source));
        }
    }
}
#endif

/* The receptive field of output pixel `at` into `column` (Kp bytes; the K..Kp tail is left
 * as it is: its weights are 0, mcu_mve_gemm.h). */
static void field(const conv_shape *shape, const int8_t *in, const pixel_at *at, int8_t *column) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, kernel_w = shape->w_dims->w, taps_row = kernel_w * channels;
    int32_t in_x0 = at->x * p->stride_w - p->pad_left, in_y0 = at->y * p->stride_h - p->pad_top;
    int32_t whole = p->dilation_w == 1 && in_x0 >= 0 && in_x0 + kernel_w <= in_dims->w;
    const int8_t *image = in + at->batch * in_dims->h * in_dims->w * channels;
    if (whole && in_y0 >= 0 && in_y0 + (shape->w_dims->h - 1) * p->dilation_h < in_dims->h) {
        inside_field(shape, image + (in_y0 * in_dims->w + in_x0) * channels, taps_row, column);
        return;
    }
    mcu_s8x16 pad = mcu_vdup_s8(shape->pad);
    int8_t *cursor = column;
    for (int32_t i = 0; i < shape->w_dims->h; ++i, cursor += taps_row) {
        int32_t in_y = in_y0 + i * p->dilation_h;
        if (in_y < 0 || in_y >= in_dims->h) {
            fill_bytes(cursor, pad, taps_row);
            continue;
        }
        const int8_t *source = image + in_y * in_dims->w * channels;
        if (whole) {
            copy_bytes(cursor, source + in_x0 * channels, taps_row);
            continue;
        }
        for (int32_t j = 0; j < kernel_w; ++j) {
            int32_t in_x = in_x0 + j * p->dilation_w;
            if (in_x < 0 || in_x >= in_dims->w) {
                fill_bytes(cursor + j * channels, pad, channels);
            } else {
                copy_bytes(cursor + j * channels, source + in_x * channels, channels);
            }
        }
    }
}


/* The field of pixel `at` into `column`: the unpredicated inside copy where it applies. */
static void column_of(const conv_shape *shape, const int8_t *in, const pixel_at *at, int8_t *column) {
    if (shape->steps > 0 && (uint32_t)(at->x - shape->x_low) <= (uint32_t)shape->x_span
        && (uint32_t)(at->y - shape->y_low) <= (uint32_t)shape->y_span) {
        copy_window(column, in + at->corner, shape->w_dims->h, &shape->steps);
    } else {
        field(shape, in, at, column);
    }
}

/* Every pixel pair through the columns (im2col): both fields copied before the pair's stores. */
static void column_pairs(const conv_shape *shape, const int8_t *in, const mcu_mve_gemm_output *output,
                         const int8_t *w, int8_t *columns, int8_t *out) {
    const mcu_dims *out_dims = shape->out_dims;
    int32_t count = out_dims->n * out_dims->h * out_dims->w, pixel_stride = mcu_pixel_stride(out_dims);
    pixel_at at = {0, 0, 0, 0};
    at.corner = corner_of(shape, &at);
    for (int32_t pixel = 0; pixel < count; pixel += 2, out += 2 * pixel_stride) {
        int32_t pair = pixel + 1 < count;
        column_of(shape, in, &at, columns);
        next_pixel(&at, shape);
        if (pair) {
            column_of(shape, in, &at, columns + shape->row);
            next_pixel(&at, shape);
        }
        mcu_mve_gemm_packed(output, columns, pair ? columns + shape->row : NULL, w, shape->row, out_dims->c, out,
                     pair ? out + pixel_stride : NULL);
    }
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
    if (needed > 0 && (ctx == NULL || ctx->buffer == NULL || ctx->size < needed)) {
        return MCU_ERR_SCRATCH;
    }
    return mcu_conv2d_s8_mve_prechecked(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
}

mcu_status mcu_conv2d_s8_mve_prechecked(const mcu_context *ctx, const mcu_conv_params *params,
                                        const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                        const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                        const mcu_dims *out_dims, int8_t *out) {
    int32_t pointwise = is_pointwise(params, in_dims, w_dims, out_dims);
    int32_t depth = w_dims->h * w_dims->w * w_dims->c;
    int32_t needed = MCU_CONV2D_S8_MVE_SCRATCH_BYTES(depth, pointwise && in_dims->c % 16 == 0);
    /* the geometry of the im2col windows; a pointwise conv reads in place unless it copies */
    conv_shape shape = {params, in_dims, w_dims, out_dims, depth, mcu_mve_row_length(depth), -quant->input_offset,
                        0, 0, 0, 0, 0, 0};
    if (!pointwise || needed > 0) {
        shape = shape_of(params, in_dims, w_dims, out_dims, -quant->input_offset);
    }
    mcu_mve_gemm_output output = {quant->multiplier, quant->shift, bias, pointwise ? NULL : bias,
                                  quant->output_offset, params->activation,
                                  mcu_mve_all_right_shifts(quant->shift, out_dims->c)};
    int8_t *column0 = needed > 0 ? (int8_t *)ctx->buffer : NULL, *column1 = column0 + (needed > 0 ? shape.row : 0);
    int32_t count = out_dims->n * out_dims->h * out_dims->w, channels = out_dims->c;
    int32_t pixel_stride = mcu_pixel_stride(out_dims);
    if (!pointwise) {
        column_pairs(&shape, in, &output, w, column0, out);
        return MCU_OK;
    }
    mcu_mve_gemm_function gemm = mcu_mve_gemm_for(channels);
    for (int32_t pixel = 0; pixel < count; pixel += 2) {
        int32_t pair = pixel + 1 < count;
        /* in place: a row of Kp > K bytes runs into the next pixel (zero weights there); the
         * last pixels, whose Kp bytes would pass the tensor's end, are copied instead */
        int32_t in_place = (pixel + 1 + pair) * depth + shape.row - depth <= count * depth;
        const int8_t *first = in_place ? in + pixel * depth : column0;
        const int8_t *second = in_place ? in + (pixel + 1) * depth : column1;
        if (!in_place) {
            pixel_at at = {pixel % out_dims->w, (pixel / out_dims->w) % out_dims->h, pixel / (out_dims->w * out_dims->h),
                           0};
            field(&shape, in, &at, column0);
            next_pixel(&at, &shape);
            if (pair) {
                field(&shape, in, &at, column1);
            }
        }
        gemm(&output, first, pair ? second : NULL, w, shape.row, channels, out + pixel * pixel_stride,
             pair ? out + (pixel + 1) * pixel_stride : NULL);
    }
    return MCU_OK;
}
