/*
 * conv_dsp.c - mcu_conv2d_s8_dsp: int8 convolution (groups = 1), NHWC, for cores with the
 * DSP extension (dual 16-bit multiply-accumulate, SMLAD).
 *
 * Two output pixels at a time. im2col writes each pixel's receptive field, K = kH*kW*C
 * values X + input_offset in the weights' (i, j, c) order, as one q15 column of Kp = ceil4(K)
 * values (padding taps and the K..Kp tail = 0), each group of four stored as (x0, x2, x1, x3):
 * the order in which SXTB16 / SXTB16 ROR 8 split a word of four int8 weights, (w0, w2) and
 * (w1, w3); SXTAB16 widens and adds the offset in one instruction. A 2x2 block (2 pixels x 2
 * output channels, mcu_dsp_dot.h) then costs per four k 3 LDRD, 4 SXTB16 and 8 SMLAD:
 *
 *   acc[p, o] = bias[o] + sum_k W[o, k] * (X_p[k] + input_offset)    (int32, wrapping, exact)
 *   Y[p, o]   = clamp(mbqm(acc, multiplier[o], shift[o]) + output_offset)
 *
 * Weights: rows zero-padded from K to Kp and interleaved by pairs of output channels
 * (mcu_runtime_dsp.h, mcu_dsp_dot.h). A pointwise conv (1x1, stride 1, no padding) widens
 * its two input rows directly; other convs with C % 4 == 0 widen whole kernel rows or taps;
 * C % 4 != 0 gathers the field as int8 first (each kernel row one run of kW*C bytes when the
 * window's columns are inside, else tap by tap), then widens it.
 *
 * Out c_stride (mcu_runtime.h): output pixel p at out + p * c_stride.
 *
 * Access order (for the overlap proof): every block reads its two pixels' fields into the
 * scratch columns before it writes any of its outputs.
 */
#include "mcu_dsp_dot.h"
#include "mcu_dsp_gemm.h"
#include "mcu_variants.h"
#include "mcu_runtime_dsp.h"

typedef struct {
    const mcu_conv_params *params;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    int32_t depth, row;      /* K and Kp */
    int32_t offset_pair;     /* (input_offset, input_offset) */
    int8_t pad;              /* the input zero point (what X + input_offset = 0 reads) */
    int32_t pad_word;        /* four of them */
    int32_t stride;          /* halfwords from a column's group to its next: 4 * the block's pixels */
} conv_shape;

/* mcu_dsp_widen for the pair / triple / quad column strides (8 / 12 / 16 halfwords), inlined. */
MCU_DSP_INLINE void widen_run(const int8_t *source, int32_t count, int32_t offset_pair, int16_t *column,
                              int32_t stride) {
#if MCU_DSP_NATIVE
    int32_t groups = count / 4, quads, a, b;
    if (stride == 16) {
        MCU_WIDEN_ASM("32");
    } else if (stride == 12) {
        MCU_WIDEN_ASM("24");
    } else {
        MCU_WIDEN_ASM("16");
    }
#else
    mcu_dsp_widen(source, count, offset_pair, column, stride);
#endif
}

/* Receptive field of output pixel (batch, y, x) when C % 4 == 0: whole rows or taps, into
 * one column of the interleaved pair or quad (groups `stride` halfwords apart). */
static void field_by_taps(const conv_shape *shape, const int8_t *in, int32_t batch, int32_t y,
                          int32_t x, int16_t *column) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c, kernel_w = shape->w_dims->w, taps_row = kernel_w * channels;
    int32_t in_x0 = x * p->stride_w - p->pad_left;
    int32_t whole = p->dilation_w == 1 && in_x0 >= 0 && in_x0 + kernel_w <= in_dims->w;
    int32_t stride = shape->stride, tap = channels * stride / 4;   /* halfwords per tap */
    for (int32_t i = 0; i < shape->w_dims->h; ++i, column += kernel_w * tap) {
        int32_t in_y = y * p->stride_h - p->pad_top + i * p->dilation_h;
        if (in_y < 0 || in_y >= in_dims->h) {
            mcu_dsp_zero(column, taps_row, stride);
            continue;
        }
        const int8_t *row = in + ((batch * in_dims->h + in_y) * in_dims->w) * channels;
        if (whole) {
            widen_run(row + in_x0 * channels, taps_row, shape->offset_pair, column, stride);
            continue;
        }
        for (int32_t j = 0; j < kernel_w; ++j) {
            int32_t in_x = in_x0 + j * p->dilation_w;
            if (in_x < 0 || in_x >= in_dims->w) {
                mcu_dsp_zero(column + j * tap, channels, stride);
            } else {
                widen_run(row + in_x * channels, channels, shape->offset_pair, column + j * tap, stride);
            }
        }
    }
}

/* Receptive field when C % 4 != 0: gathered as int8 (natural order; padding and the K..Kp
 * tail = the input zero point, which the offset turns into 0), then widened. */
static void field_by_bytes(const conv_shape *shape, const int8_t *in, int32_t batch, int32_t y,
                           int32_t x, int8_t *gathered, int16_t *column) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t channels = in_dims->c;
    int8_t *cursor = gathered;
    for (int32_t i = 0; i < shape->w_dims->h; ++i) {
        int32_t in_y = y * p->stride_h - p->pad_top + i * p->dilation_h;
        for (int32_t j = 0; j < shape->w_dims->w; ++j, cursor += channels) {
            int32_t in_x = x * p->stride_w - p->pad_left + j * p->dilation_w;
            int32_t inside = in_y >= 0 && in_y < in_dims->h && in_x >= 0 && in_x < in_dims->w;
            const int8_t *source = in + (inside ? ((batch * in_dims->h + in_y) * in_dims->w + in_x) * channels : 0);
            for (int32_t c = 0; c < channels; ++c) {   /* C < 4 here, mostly: no memcpy call */
                cursor[c] = inside ? source[c] : shape->pad;
            }
        }
    }
    memset(cursor, shape->pad, (size_t)(shape->row - shape->depth));
    widen_run(gathered, shape->row, shape->offset_pair, column, shape->stride);
}

/* `count` bytes from `source` to `target`, a word at a time while four remain (unaligned
 * LDR / STR), never past either run. */
static inline void copy_run(int8_t *target, const int8_t *source, int32_t count) {
    int32_t t = 0;
    for (; t + 4 <= count; t += 4) {
        mcu_write32(target + t, mcu_read32(source + t));
    }
    for (; t < count; ++t) {
        target[t] = source[t];
    }
}

/* Receptive field when C % 4 != 0 and the window's columns are inside the input (dilation_w
 * 1; the first layers, C = 1 / 3): each kernel row is one run of kW*C contiguous input bytes,
 * copied as such (a row in the padding: the zero point), then widened. */
static void field_by_runs(const conv_shape *shape, const int8_t *in, int32_t batch, int32_t y, int32_t in_x0,
                          int8_t *gathered, int16_t *column) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims;
    int32_t run = shape->w_dims->w * in_dims->c;
    int32_t in_y = y * p->stride_h - p->pad_top;
    int8_t *cursor = gathered;
    mcu_write32(gathered + shape->row - 4, shape->pad_word);   /* the K..Kp tail (runs overwrite the rest) */
    for (int32_t i = 0; i < shape->w_dims->h; ++i, cursor += run, in_y += p->dilation_h) {
        if (in_y < 0 || in_y >= in_dims->h) {
            for (int32_t t = 0; t < run; ++t) {
                cursor[t] = shape->pad;
            }
        } else {
            copy_run(cursor, in + ((batch * in_dims->h + in_y) * in_dims->w + in_x0) * in_dims->c, run);
        }
    }
    widen_run(gathered, shape->row, shape->offset_pair, column, shape->stride);
}

/* The field of output pixel `pixel` into column `which` (0 or 1) of the pair at `columns`. */
static void field(const conv_shape *shape, const int8_t *in, int32_t pixel, int8_t *gathered,
                  int16_t *columns, int32_t which) {
    const mcu_dims *out_dims = shape->out_dims;
    int32_t x = pixel % out_dims->w, y = (pixel / out_dims->w) % out_dims->h;
    int32_t batch = pixel / (out_dims->w * out_dims->h);
    if (shape->in_dims->c % 4 != 0) {
        const mcu_conv_params *p = shape->params;
        int32_t in_x0 = x * p->stride_w - p->pad_left;
        if (p->dilation_w == 1 && in_x0 >= 0 && in_x0 + shape->w_dims->w <= shape->in_dims->w) {
            field_by_runs(shape, in, batch, y, in_x0, gathered, columns + 4 * which);
        } else {
            field_by_bytes(shape, in, batch, y, x, gathered, columns + 4 * which);
        }
    } else {
        field_by_taps(shape, in, batch, y, x, columns + 4 * which);
    }
}


static int32_t conv_row_length(const mcu_dims *w_dims) {
    return mcu_dsp_row_length(w_dims->h * w_dims->w * w_dims->c);
}

int32_t mcu_conv2d_s8_dsp_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                       const mcu_dims *w_dims, const mcu_dims *out_dims) {
    (void)params;
    if (in_dims == NULL || w_dims == NULL || out_dims == NULL) {
        return 0;
    }
    return MCU_CONV2D_S8_DSP_SCRATCH_BYTES(w_dims->h * w_dims->w * w_dims->c, in_dims->c, mcu_dims_count(in_dims),
                                           mcu_dims_count(out_dims));
}

/* The call's block: 4 (quad), 3 (triple) or 2 (pair) pixels (mcu_runtime_dsp.h). */
static int32_t block_of(const mcu_dims *in_dims, const mcu_dims *w_dims, const mcu_dims *out_dims) {
    return MCU_CONV2D_S8_DSP_BLOCK(w_dims->h * w_dims->w * w_dims->c, in_dims->c, mcu_dims_count(in_dims),
                                  mcu_dims_count(out_dims));
}

static int32_t is_pointwise(const mcu_conv_params *params, const mcu_dims *in_dims, const mcu_dims *w_dims,
                            const mcu_dims *out_dims) {
    return w_dims->h == 1 && w_dims->w == 1 && params->stride_h == 1 && params->stride_w == 1
           && params->pad_top == 0 && params->pad_left == 0 && in_dims->h == out_dims->h
           && in_dims->w == out_dims->w;
}

/* Whether the `block` pixels from `pixel` on lie in one output row with every window inside
 * the input, C % 4 == 0 and dilation_w 1 (the common case: each kernel row of each pixel one
 * run of kW*C input bytes); their first window's input origin in *origin. */
static int32_t block_inside(const conv_shape *shape, const int8_t *in, int32_t pixel, int32_t block,
                            const int8_t **origin) {
    const mcu_conv_params *p = shape->params;
    const mcu_dims *in_dims = shape->in_dims, *out_dims = shape->out_dims;
    if (in_dims->c % 4 != 0 || p->dilation_w != 1) {   /* before the divisions: the first layers */
        return 0;
    }
    int32_t x = pixel % out_dims->w, y = (pixel / out_dims->w) % out_dims->h;
    int32_t batch = pixel / (out_dims->w * out_dims->h);
    int32_t in_x0 = x * p->stride_w - p->pad_left, in_y0 = y * p->stride_h - p->pad_top;
    int32_t last_x = in_x0 + (block - 1) * p->stride_w + shape->w_dims->w;
    int32_t last_y = in_y0 + (shape->w_dims->h - 1) * p->dilation_h + 1;
    if (x + block > out_dims->w || in_x0 < 0 || in_y0 < 0
        || last_x > in_dims->w || last_y > in_dims->h) {
        return 0;
    }
    *origin = in + ((batch * in_dims->h + in_y0) * in_dims->w + in_x0) * in_dims->c;
    return 1;
}

/* The fields of block_inside's pixels: kH runs per pixel, widened without checks. */
static void fields_inside(const conv_shape *shape, const int8_t *origin, int32_t block, int16_t *columns) {
    const mcu_dims *in_dims = shape->in_dims;
    int32_t run = shape->w_dims->w * in_dims->c, rows = shape->w_dims->h, stride = shape->stride;
    int32_t row_bytes = shape->params->dilation_h * in_dims->w * in_dims->c;
    int32_t step = shape->params->stride_w * in_dims->c, run_halfwords = run * stride / 4;
    for (int32_t which = 0; which < block; ++which, origin += step) {
        int16_t *column = columns + 4 * which;
        const int8_t *source = origin;
        for (int32_t i = 0; i < rows; ++i, source += row_bytes, column += run_halfwords) {
            widen_run(source, run, shape->offset_pair, column, stride);
        }
    }
}

/* The fields of the block's `valid` pixels from `pixel` on into its `block` columns (the
 * missing ones of a last block: zeros). */
static void block_fields(const conv_shape *shape, const int8_t *in, int32_t pointwise, int32_t pixel,
                         int32_t valid, int32_t block, int16_t *columns) {
    int8_t *gathered = (int8_t *)(columns + shape->stride / 4 * shape->row);   /* after the full block's columns */
    const int8_t *origin;
    if (!pointwise && valid == block && block_inside(shape, in, pixel, block, &origin)) {
        fields_inside(shape, origin, block, columns);
        return;
    }
    for (int32_t which = 0; which < block; ++which) {
        if (which >= valid) {
            mcu_dsp_zero(columns + 4 * which, shape->row, shape->stride);
        } else if (pointwise) {
            mcu_dsp_widen_row(in + (pixel + which) * shape->in_dims->c, shape->in_dims->c, shape->offset_pair,
                              columns + 4 * which, shape->stride);
        } else {
            field(shape, in, pixel + which, gathered, columns, which);
        }
    }
}

/* Blocks of four (three) pixels x one output channel (mcu_dsp_quad_function). */
static void quad_blocks(const conv_shape *shape, const mcu_dsp_gemm_output *output, const int8_t *in,
                        int32_t pointwise, const int8_t *w, int16_t *columns, int8_t *out) {
    const mcu_dims *out_dims = shape->out_dims;
    int32_t count = out_dims->n * out_dims->h * out_dims->w, pixel_stride = mcu_pixel_stride(out_dims);
    int32_t block = shape->stride / 4;
    mcu_dsp_quad_function gemm = mcu_dsp_quad_for(output, out_dims->c, block);
    for (int32_t pixel = 0; pixel < count; pixel += block) {
        int32_t valid = count - pixel < block ? count - pixel : block;
        int8_t *targets[4];
        for (int32_t which = 0; which < 4; ++which) {
            targets[which] = out + (pixel + (which < valid ? which : 0)) * pixel_stride;
        }
        block_fields(shape, in, pointwise, pixel, valid, block, columns);
        gemm(output, columns, w, shape->row, out_dims->c, targets);
    }
}

/* Blocks of two pixels x two output channels (mcu_dsp_gemm_function). */
static void pair_blocks(const conv_shape *shape, const mcu_dsp_gemm_output *output, const int8_t *in,
                        int32_t pointwise, const int8_t *w, int16_t *columns, int8_t *out) {
    const mcu_dims *out_dims = shape->out_dims;
    int32_t count = out_dims->n * out_dims->h * out_dims->w, pixel_stride = mcu_pixel_stride(out_dims);
    mcu_dsp_gemm_function gemm = mcu_dsp_gemm_for(output, out_dims->c);
    for (int32_t pixel = 0; pixel < count; pixel += 2) {
        int32_t pair = pixel + 1 < count;
        block_fields(shape, in, pointwise, pixel, 1 + pair, 1 + pair, columns);
        gemm(output, columns, w, shape->row, out_dims->c, out + pixel * pixel_stride,
             pair ? out + (pixel + 1) * pixel_stride : NULL);
    }
}

mcu_status mcu_conv2d_s8_dsp(const mcu_context *ctx, const mcu_conv_params *params,
                             const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                             const mcu_dims *out_dims, int8_t *out) {
    if (!mcu_conv_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out, 0) || ((uintptr_t)w & 3u) != 0) {
        return MCU_ERR_ARG;
    }
    int32_t needed = mcu_conv2d_s8_dsp_scratch_size(params, in_dims, w_dims, out_dims);
    if (ctx == NULL || ctx->buffer == NULL || ctx->size < needed || ((uintptr_t)ctx->buffer & 3u) != 0) {
        return MCU_ERR_SCRATCH;
    }
    int32_t depth = w_dims->h * w_dims->w * w_dims->c, block = block_of(in_dims, w_dims, out_dims);
    conv_shape shape = {params, in_dims, w_dims, out_dims, depth, conv_row_length(w_dims),
                        mcu_dsp_pair(quant->input_offset), (int8_t)(-quant->input_offset),
                        (int32_t)((uint32_t)(uint8_t)(int8_t)(-quant->input_offset) * 0x01010101u), 4 * block};
    mcu_dsp_gemm_output output = {quant->multiplier, quant->shift, quant->output_offset, bias, params->activation,
                                  mcu_dsp_reach(depth)};
    int32_t pointwise = is_pointwise(params, in_dims, w_dims, out_dims);
    if (block > 2) {
        quad_blocks(&shape, &output, in, pointwise, w, (int16_t *)ctx->buffer, out);
    } else {
        pair_blocks(&shape, &output, in, pointwise, w, (int16_t *)ctx->buffer, out);
    }
    return MCU_OK;
}
