/*
 * transpose_conv.c - TFLite TRANSPOSE_CONV, NHWC, int8 and 16x8, with groups and dilation.
 *
 * Every input pixel scatters into a scratch accumulator of one output batch:
 *   acc[y*sh + i*dh - pad_top, x*sw + j*dw - pad_left, o] += (X[y, x, g*Cg + c] + input_offset)
 *                                                           * W[o, i, j, c]
 * (positions outside the output are dropped), then
 *   Y = clamp(requantize(acc + bias[o], multiplier[o], shift[o]) + output_offset)
 * with the int32 form for s8 (int32 scratch) and the int64 form for s16 (int64 scratch).
 * Spec: reference/int_kernels/conv.py (conv_transpose).
 */
#include <string.h>

#include "mcu_internal.h"

int32_t mcu_transpose_conv2d_s8_scratch_size(const mcu_dims *out_dims) {
    return MCU_TRANSPOSE_CONV2D_SCRATCH_BYTES(out_dims->h, out_dims->w, out_dims->c, (int32_t)sizeof(int32_t));
}

int32_t mcu_transpose_conv2d_s16_scratch_size(const mcu_dims *out_dims) {
    return MCU_TRANSPOSE_CONV2D_SCRATCH_BYTES(out_dims->h, out_dims->w, out_dims->c, (int32_t)sizeof(int64_t));
}

typedef struct {
    const mcu_conv_params *params;
    int32_t input_offset;
    const mcu_dims *in_dims, *w_dims, *out_dims;
    mcu_element_type type;
} scatter_plan;

/* Adds one input pixel's contributions to the accumulator (int32 or int64 elements). */
static void scatter_pixel(const scatter_plan *plan, const void *in, int32_t in_base, int32_t y,
                          int32_t x, const int8_t *w, void *acc) {
    const mcu_dims *w_dims = plan->w_dims, *out_dims = plan->out_dims;
    int32_t per_group = out_dims->c / (plan->in_dims->c / w_dims->c);
    for (int32_t i = 0; i < w_dims->h; ++i) {
        int32_t out_y = y * plan->params->stride_h + i * plan->params->dilation_h - plan->params->pad_top;
        for (int32_t j = 0; j < w_dims->w; ++j) {
            int32_t out_x = x * plan->params->stride_w + j * plan->params->dilation_w - plan->params->pad_left;
            if (out_y < 0 || out_y >= out_dims->h || out_x < 0 || out_x >= out_dims->w) {
                continue;
            }
            int32_t out_base = (out_y * out_dims->w + out_x) * out_dims->c;
            for (int32_t o = 0; o < out_dims->c; ++o) {
                const int8_t *taps = w + ((o * w_dims->h + i) * w_dims->w + j) * w_dims->c;
                int32_t first_channel = (o / per_group) * w_dims->c;
                int64_t sum = 0;
                for (int32_t c = 0; c < w_dims->c; ++c) {
                    int32_t value = mcu_load(in, in_base + first_channel + c, plan->type) + plan->input_offset;
                    sum += (int64_t)taps[c] * value;
                }
                if (plan->type == MCU_INT8) {
                    int32_t *slot = (int32_t *)acc + out_base + o;
                    *slot = mcu_wrap_add(*slot, (int32_t)sum);
                } else {
                    ((int64_t *)acc)[out_base + o] += sum;
                }
            }
        }
    }
}

static mcu_status transpose_conv_core(const mcu_context *ctx, const scatter_plan *plan,
                                      const mcu_accumulator_output *output, const void *in,
                                      const int8_t *w, void *out) {
    const mcu_dims *in_dims = plan->in_dims, *w_dims = plan->w_dims, *out_dims = plan->out_dims;
    const mcu_conv_params *params = plan->params;
    if (!mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims) || !mcu_dims_valid(out_dims) || in == NULL
        || w == NULL || out == NULL || output->multiplier == NULL || output->shift == NULL
        || params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 || params->dilation_w < 1
        || params->pad_top < 0 || params->pad_left < 0 || in_dims->c % w_dims->c != 0
        || w_dims->n != out_dims->c || out_dims->c % (in_dims->c / w_dims->c) != 0
        || out_dims->n != in_dims->n || !mcu_activation_valid(&output->activation, plan->type)) {
        return MCU_ERR_ARG;
    }
    int32_t element = plan->type == MCU_INT8 ? (int32_t)sizeof(int32_t) : (int32_t)sizeof(int64_t);
    int32_t plane = out_dims->h * out_dims->w * out_dims->c;
    if (ctx == NULL || ctx->buffer == NULL || ctx->size < plane * element) {
        return MCU_ERR_SCRATCH;
    }
    for (int32_t n = 0; n < in_dims->n; ++n) {
        memset(ctx->buffer, 0, (size_t)(plane * element));
        for (int32_t y = 0; y < in_dims->h; ++y) {
            for (int32_t x = 0; x < in_dims->w; ++x) {
                int32_t in_base = ((n * in_dims->h + y) * in_dims->w + x) * in_dims->c;
                scatter_pixel(plan, in, in_base, y, x, w, ctx->buffer);
            }
        }
        for (int32_t index = 0; index < plane; ++index) {
            int64_t acc = plan->type == MCU_INT8 ? ((const int32_t *)ctx->buffer)[index]
                                                 : ((const int64_t *)ctx->buffer)[index];
            int32_t value = mcu_output_from_accumulator(output, acc, index % out_dims->c);
            mcu_store(out, n * plane + index, plan->type, value);
        }
    }
    return MCU_OK;
}

mcu_status mcu_transpose_conv2d_s8(const mcu_context *ctx, const mcu_conv_params *params,
                                   const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                   const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    scatter_plan plan = {params, quant->input_offset, in_dims, w_dims, out_dims, MCU_INT8};
    mcu_accumulator_output output = {quant->multiplier, quant->shift, bias, NULL, 0,
                                     quant->output_offset, params->activation};
    return transpose_conv_core(ctx, &plan, &output, in, w, out);
}

mcu_status mcu_transpose_conv2d_s16(const mcu_context *ctx, const mcu_conv_params *params,
                                    const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                    const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                    const int64_t *bias, const mcu_dims *out_dims, int16_t *out) {
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    scatter_plan plan = {params, quant->input_offset, in_dims, w_dims, out_dims, MCU_INT16};
    mcu_accumulator_output output = {quant->multiplier, quant->shift, NULL, bias, 1,
                                     quant->output_offset, params->activation};
    return transpose_conv_core(ctx, &plan, &output, in, w, out);
}
