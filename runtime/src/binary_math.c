/*
 * binary_math.c - Maximum / Minimum (TFLite MAXIMUM / MINIMUM: raw integers compared, the
 * operands share scale and zero point) and SquaredDifference, int8 and int16, with 4-D
 * broadcasting (a dimension of 1 is read with stride 0).
 *
 * SquaredDifference (TFLM squared_difference.cc; left_shift 7 for s8, 0 for s16):
 *   a = rdbpot(srdhm((A + off1) << left_shift, m1), -s1),  b likewise,
 *   Y = clamp(mbqm(wrap32((a - b)^2), mo, so) + off_out, type range)
 * Spec: reference/int_kernels/binary_math.py.
 */
#include "mcu_internal.h"

typedef enum { OP_MAXIMUM, OP_MINIMUM, OP_SQUARED_DIFFERENCE } binary_math_op;

static int32_t squared_difference(const mcu_squared_difference_quant *q, int32_t a, int32_t b) {
    int32_t scaled_a = mcu_rdbpot(mcu_srdhm(mcu_wrap_shift_left(a + q->input1_offset, q->left_shift),
                                            q->input1_multiplier), -q->input1_shift);
    int32_t scaled_b = mcu_rdbpot(mcu_srdhm(mcu_wrap_shift_left(b + q->input2_offset, q->left_shift),
                                            q->input2_multiplier), -q->input2_shift);
    int32_t difference = mcu_wrap_sub(scaled_a, scaled_b);
    int32_t square = (int32_t)((uint32_t)difference * (uint32_t)difference);
    return mcu_mbqm(square, q->output_multiplier, q->output_shift);
}

static mcu_status binary_math(binary_math_op op, const mcu_squared_difference_quant *quant,
                              const mcu_dims *in1_dims, const void *in1, const mcu_dims *in2_dims,
                              const void *in2, const mcu_dims *out_dims, void *out, mcu_element_type type) {
    int32_t strides1[4], strides2[4];
    if (!mcu_dims_valid(in1_dims) || !mcu_dims_valid(in2_dims) || !mcu_dims_valid(out_dims) || in1 == NULL
        || in2 == NULL || out == NULL || !mcu_broadcast_strides(in1_dims, out_dims, strides1)
        || !mcu_broadcast_strides(in2_dims, out_dims, strides2)
        || (op == OP_SQUARED_DIFFERENCE && quant == NULL)) {
        return MCU_ERR_ARG;
    }
    int32_t low = mcu_type_min(type), high = mcu_type_max(type), index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t a = mcu_load(in1, n * strides1[0] + y * strides1[1] + x * strides1[2] + c * strides1[3],
                                         type);
                    int32_t b = mcu_load(in2, n * strides2[0] + y * strides2[1] + x * strides2[2] + c * strides2[3],
                                         type);
                    int32_t result;
                    if (op == OP_MAXIMUM) {
                        result = a > b ? a : b;
                    } else if (op == OP_MINIMUM) {
                        result = a < b ? a : b;
                    } else {
                        result = mcu_clamp_add(squared_difference(quant, a, b), quant->output_offset, low, high);
                    }
                    mcu_store(out, index++, type, result);
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_maximum_s8(const mcu_context *ctx, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return binary_math(OP_MAXIMUM, NULL, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_maximum_s16(const mcu_context *ctx, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return binary_math(OP_MAXIMUM, NULL, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}

mcu_status mcu_minimum_s8(const mcu_context *ctx, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return binary_math(OP_MINIMUM, NULL, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_minimum_s16(const mcu_context *ctx, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return binary_math(OP_MINIMUM, NULL, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}

mcu_status mcu_squared_difference_s8(const mcu_context *ctx, const mcu_squared_difference_quant *quant,
                                     const mcu_dims *in1_dims, const int8_t *in1, const mcu_dims *in2_dims,
                                     const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return binary_math(OP_SQUARED_DIFFERENCE, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_squared_difference_s16(const mcu_context *ctx, const mcu_squared_difference_quant *quant,
                                      const mcu_dims *in1_dims, const int16_t *in1, const mcu_dims *in2_dims,
                                      const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return binary_math(OP_SQUARED_DIFFERENCE, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}
