/*
 * concat.c - Concatenation along n, h, w or c, int8 and int16.
 *
 * The output is `outer` blocks (product of the dims before the axis); block b is input 0's
 * block b, then input 1's, ... where input i's block has in_i[axis] * (product of the dims
 * after the axis) elements. Inputs sharing the output's quantization are copied, the others
 * requantized: Y = clamp(mbqm(wrap32(X - zp_in), m, s) + zp_out, type range).
 * Copies are memmove, not memcpy: the planner may place the output over a dead input
 * (src/mcudeploy/kernels/overlap.py, concat_proof), so one block's copy may overlap its source.
 * Spec: reference/int_kernels/shape.py (concat).
 */
#include <string.h>

#include "mcu_internal.h"

static int32_t product(const mcu_dims *dims, int32_t first_axis, int32_t end_axis) {
    int32_t result = 1;
    for (int32_t axis = first_axis; axis < end_axis; ++axis) {
        result *= mcu_dims_at(dims, axis);
    }
    return result;
}

/* Input i of the typed pointer array `in` (int8_t *const * or int16_t *const *). */
static const void *input_at(const void *in, int32_t i, mcu_element_type type) {
    if (type == MCU_INT8) {
        return ((const int8_t *const *)in)[i];
    }
    return ((const int16_t *const *)in)[i];
}

static int32_t shapes_valid(const mcu_concat_params *params, const mcu_dims *in_dims, const void *in,
                            const mcu_dims *out_dims, mcu_element_type type) {
    int32_t total = 0;
    for (int32_t i = 0; i < params->count; ++i) {
        if (!mcu_dims_valid(&in_dims[i]) || input_at(in, i, type) == NULL) {
            return 0;
        }
        for (int32_t axis = 0; axis < 4; ++axis) {
            if (axis != params->axis && mcu_dims_at(&in_dims[i], axis) != mcu_dims_at(out_dims, axis)) {
                return 0;
            }
        }
        total += mcu_dims_at(&in_dims[i], params->axis);
    }
    return total == mcu_dims_at(out_dims, params->axis);
}

static void copy_block(const mcu_concat_quant *quant, const void *in, int32_t in_index, void *out,
                       int32_t out_index, int32_t length, mcu_element_type type) {
    if (quant == NULL || !quant->requantize) {
        memmove((char *)out + (size_t)out_index * type, (const char *)in + (size_t)in_index * type,
                (size_t)length * type);
        return;
    }
    const mcu_requantize_quant *q = &quant->quant;
    for (int32_t k = 0; k < length; ++k) {
        int32_t difference = mcu_wrap_sub(mcu_load(in, in_index + k, type), q->input_zero_point);
        int32_t value = mcu_clamp_add(mcu_mbqm(difference, q->multiplier, q->shift), q->output_zero_point,
                                      mcu_type_min(type), mcu_type_max(type));
        mcu_store(out, out_index + k, type, value);
    }
}

static mcu_status concat_core(const mcu_concat_params *params, const mcu_concat_quant *quant,
                              const mcu_dims *in_dims, const void *in, const mcu_dims *out_dims,
                              void *out, mcu_element_type type) {
    if (params == NULL || in_dims == NULL || in == NULL || out == NULL || !mcu_dims_valid(out_dims)
        || params->count < 1 || params->axis < 0 || params->axis > 3
        || !shapes_valid(params, in_dims, in, out_dims, type)) {
        return MCU_ERR_ARG;
    }
    int32_t outer = product(out_dims, 0, params->axis), inner = product(out_dims, params->axis + 1, 4);
    int32_t out_index = 0;
    for (int32_t block = 0; block < outer; ++block) {
        for (int32_t i = 0; i < params->count; ++i) {
            int32_t length = mcu_dims_at(&in_dims[i], params->axis) * inner;
            const mcu_concat_quant *plan = quant != NULL ? &quant[i] : NULL;
            copy_block(plan, input_at(in, i, type), block * length, out, out_index, length, type);
            out_index += length;
        }
    }
    return MCU_OK;
}

mcu_status mcu_concat_s8(const mcu_context *ctx, const mcu_concat_params *params,
                         const mcu_concat_quant *quant, const mcu_dims *in_dims,
                         const int8_t *const *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return concat_core(params, quant, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_concat_s16(const mcu_context *ctx, const mcu_concat_params *params,
                          const mcu_concat_quant *quant, const mcu_dims *in_dims,
                          const int16_t *const *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return concat_core(params, quant, in_dims, in, out_dims, out, MCU_INT16);
}
