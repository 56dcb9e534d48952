/*
 * elementwise_mve.c - mcu_add_s8_mve, mcu_mul_s8_mve: int8 Add and Mul of two tensors of the
 * same shape (no broadcasting) for cores with MVE, four elements per int32 vector:
 *
 *   Add: a = rdbpot(srdhm((A + off1) << ls, m1), -s1),  b likewise,
 *        Y = clamp(rdbpot(srdhm(a + b, mo), -so) + off_out)
 *   Mul: Y = clamp(mbqm((A + off1) * (B + off2), m, s) + off_out)
 *
 * srdhm is VQRDMULH by the scalar multiplier, rdbpot VRSHL by -shift after the sign fix-up
 * (mcu_mve_internal.h): TFLite's arithmetic for every value, no range condition. The last
 * count % 4 elements are predicated. Access order: each group of four outputs is written
 * after the four elements of both inputs are read (in-place with either input is safe).
 * Out c_stride (mcu_runtime.h): pixel p's C outputs at element p * c_stride, one predicated
 * run of C elements per pixel (one run of all when dense).
 */
#include "mcu_mve_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_mve.h"

/* rdbpot(srdhm(value, multiplier), right) with scalar parameters, right >= 0. */
static inline mcu_s32x4 scaled(mcu_s32x4 value, int32_t multiplier, int32_t right) {
    value = mcu_vqrdmulh_n_s32(value, multiplier);
    if (right > 0) {
        value = mcu_vqadd_s32(value, mcu_vsign_s32(value));
    }
    return mcu_vrshl_r_s32(value, -right);
}

/* Four int8 (predicated) widened to int32, plus an offset. */
static inline mcu_s32x4 load4(const int8_t *p, int32_t offset, mcu_pred lanes) {
    return mcu_vadd_n_s32(mcu_vld_s8_s32_z(p, lanes), offset);
}

static void add_run(const mcu_add_quant *quant, mcu_s32x4 low, mcu_s32x4 high, const int8_t *in1,
                    const int8_t *in2, int8_t *out, int32_t count) {
    for (int32_t index = 0; index < count; index += 4) {
        mcu_pred lanes = mcu_vctp32(count - index);
        mcu_s32x4 a = mcu_vshl_r_s32(load4(in1 + index, quant->input1_offset, lanes), quant->left_shift);
        mcu_s32x4 b = mcu_vshl_r_s32(load4(in2 + index, quant->input2_offset, lanes), quant->left_shift);
        mcu_s32x4 sum = mcu_vadd_s32(scaled(a, quant->input1_multiplier, -quant->input1_shift),
                                     scaled(b, quant->input2_multiplier, -quant->input2_shift));
        mcu_s32x4 result = mcu_vqadd_n_s32(scaled(sum, quant->output_multiplier, -quant->output_shift),
                                           quant->output_offset);
        mcu_vst_s32_as_s8_p(out + index, mcu_vmin_s32(mcu_vmax_s32(result, low), high), lanes);
    }
}

mcu_status mcu_add_s8_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_same_shape_arguments_valid(params, in1_dims, in1, in2_dims, in2, out_dims, out) || quant->left_shift < 0
        || quant->left_shift > 30 || quant->input1_shift > 0 || quant->input2_shift > 0 || quant->output_shift > 0) {
        return MCU_ERR_ARG;
    }
    mcu_s32x4 low = mcu_vdup_s32(params->activation.min), high = mcu_vdup_s32(params->activation.max);
    int32_t run = out_dims->c_stride > 0 ? out_dims->c : mcu_dims_count(out_dims);
    int32_t stride = out_dims->c_stride > 0 ? out_dims->c_stride : run;
    for (int32_t first = 0, row = 0; first < mcu_dims_count(out_dims); first += run, ++row) {
        add_run(quant, low, high, in1 + first, in2 + first, out + row * stride, run);
    }
    return MCU_OK;
}

static void mul_run(const mcu_mul_quant *quant, const mcu_mve_scale *scale, mcu_s32x4 low, mcu_s32x4 high,
                    const int8_t *in1, const int8_t *in2, int8_t *out, int32_t count) {
    for (int32_t index = 0; index < count; index += 4) {
        mcu_pred lanes = mcu_vctp32(count - index);
        mcu_s32x4 product = mcu_vmul_s32(load4(in1 + index, quant->input1_offset, lanes),
                                         load4(in2 + index, quant->input2_offset, lanes));
        mcu_vst_s32_as_s8_p(out + index, mcu_mve_output(product, scale, quant->output_offset, low, high), lanes);
    }
}

mcu_status mcu_mul_s8_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_same_shape_arguments_valid(params, in1_dims, in1, in2_dims, in2, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    mcu_mve_scale scale = mcu_mve_scale_of(mcu_vdup_s32(quant->output_multiplier), mcu_vdup_s32(quant->output_shift));
    mcu_s32x4 low = mcu_vdup_s32(params->activation.min), high = mcu_vdup_s32(params->activation.max);
    int32_t run = out_dims->c_stride > 0 ? out_dims->c : mcu_dims_count(out_dims);
    int32_t stride = out_dims->c_stride > 0 ? out_dims->c_stride : run;
    for (int32_t first = 0, row = 0; first < mcu_dims_count(out_dims); first += run, ++row) {
        mul_run(quant, &scale, low, high, in1 + first, in2 + first, out + row * stride, run);
    }
    return MCU_OK;
}
