/*
 * elementwise.c - Add, Sub and Mul of two tensors with 4-D broadcasting, int8 and int16.
 *
 * Add / Sub (TFLite):  a = rdbpot(srdhm(wrap32((A + off1) << left_shift), m1), -s1),
 *                      b likewise,  Y = clamp(mbqm(wrap32(a +/- b), mo, so) + off_out)
 * Mul:                 Y = clamp(mbqm(wrap32((A + off1) * (B + off2)), m, s) + off_out)
 * A dimension of an input equal to 1 broadcasts (read with stride 0). Out c_stride
 * (mcu_runtime.h): output pixel p at element p * c_stride.
 * Spec: reference/int_kernels/elementwise.py.
 */
#include "mcu_internal.h"

typedef enum { OP_ADD, OP_SUB, OP_MUL } binary_op;

typedef struct {
    binary_op op;
    const mcu_add_quant *add;
    const mcu_mul_quant *mul;
    mcu_activation activation;
} binary_plan;

static int32_t apply(const binary_plan *plan, int32_t a, int32_t b) {
    if (plan->op == OP_MUL) {
        const mcu_mul_quant *q = plan->mul;
        int32_t product = (int32_t)((uint32_t)(a + q->input1_offset) * (uint32_t)(b + q->input2_offset));
        return mcu_clamp_add(mcu_mbqm(product, q->output_multiplier, q->output_shift), q->output_offset,
                             plan->activation.min, plan->activation.max);
    }
    const mcu_add_quant *q = plan->add;
    int32_t scaled_a = mcu_rdbpot(mcu_srdhm(mcu_wrap_shift_left(a + q->input1_offset, q->left_shift),
                                            q->input1_multiplier), -q->input1_shift);
    int32_t scaled_b = mcu_rdbpot(mcu_srdhm(mcu_wrap_shift_left(b + q->input2_offset, q->left_shift),
                                            q->input2_multiplier), -q->input2_shift);
    int32_t raw = plan->op == OP_ADD ? mcu_wrap_add(scaled_a, scaled_b) : mcu_wrap_sub(scaled_a, scaled_b);
    int32_t result = mcu_rdbpot(mcu_srdhm(raw, q->output_multiplier), -q->output_shift);
    return mcu_clamp_add(result, q->output_offset, plan->activation.min, plan->activation.max);
}

static mcu_status binary_core(const binary_plan *plan, const mcu_dims *in1_dims, const void *in1,
                              const mcu_dims *in2_dims, const void *in2, const mcu_dims *out_dims,
                              void *out, mcu_element_type type) {
    int32_t strides1[4], strides2[4];
    if (!mcu_dims_valid(in1_dims) || !mcu_dims_valid(in2_dims) || !mcu_out_dims_valid(out_dims) || in1 == NULL
        || in2 == NULL || out == NULL || !mcu_broadcast_strides(in1_dims, out_dims, strides1)
        || !mcu_broadcast_strides(in2_dims, out_dims, strides2) || !mcu_activation_valid(&plan->activation, type)) {
        return MCU_ERR_ARG;
    }
    int32_t pixel = 0, pixel_stride = mcu_pixel_stride(out_dims);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, pixel += pixel_stride) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t a = mcu_load(in1, n * strides1[0] + y * strides1[1] + x * strides1[2] + c * strides1[3],
                                         type);
                    int32_t b = mcu_load(in2, n * strides2[0] + y * strides2[1] + x * strides2[2] + c * strides2[3],
                                         type);
                    mcu_store(out, pixel + c, type, apply(plan, a, b));
                }
            }
        }
    }
    return MCU_OK;
}

static mcu_status add_or_sub(binary_op op, const mcu_elementwise_params *params, const mcu_add_quant *quant,
                             const mcu_dims *in1_dims, const void *in1, const mcu_dims *in2_dims,
                             const void *in2, const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (params == NULL || quant == NULL || quant->left_shift < 0 || quant->left_shift > 30
        || quant->input1_shift > 0 || quant->input2_shift > 0 || quant->output_shift > 0) {
        return MCU_ERR_ARG;
    }
    binary_plan plan = {op, quant, NULL, params->activation};
    return binary_core(&plan, in1_dims, in1, in2_dims, in2, out_dims, out, type);
}

static mcu_status mul(const mcu_elementwise_params *params, const mcu_mul_quant *quant,
                      const mcu_dims *in1_dims, const void *in1, const mcu_dims *in2_dims, const void *in2,
                      const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (params == NULL || quant == NULL) {
        return MCU_ERR_ARG;
    }
    binary_plan plan = {OP_MUL, NULL, quant, params->activation};
    return binary_core(&plan, in1_dims, in1, in2_dims, in2, out_dims, out, type);
}

mcu_status mcu_add_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return add_or_sub(OP_ADD, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_add_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return add_or_sub(OP_ADD, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}

mcu_status mcu_sub_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return add_or_sub(OP_SUB, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_sub_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return add_or_sub(OP_SUB, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}

mcu_status mcu_mul_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return mul(params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT8);
}

mcu_status mcu_mul_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return mul(params, quant, in1_dims, in1, in2_dims, in2, out_dims, out, MCU_INT16);
}
