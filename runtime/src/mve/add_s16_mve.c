/*
 * add_s16_mve.c - mcu_add_s16_mve: 16x8 Add of two int16 tensors of the same shape (no
 * broadcasting, zero points 0, left_shift 15) for Helium, four elements per vector:
 *
 *   a = rdbpot(srdhm(A << 15, m1), -s1)  = rshl(qrdmulh(A << 15, m1) + sign fix-up, s1)
 *   b likewise;  Y = clamp(rdbpot(srdhm(a + b, mo), -so))
 *
 * VQRDMULH is gemmlowp's srdhm exactly; rdbpot(v, r) (halves away from zero) is VRSHL by -r
 * (halves up) of v - 1 for negative v (saturating: the same quotient for INT32_MIN, r <= 31).
 * Access order: elements i..i+3 of both inputs are read before element i is written (the
 * reference's in-place proof holds). Anything else runs the reference mcu_add_s16.
 */
#include "mcu_mve_s16.h"
#include "mcu_runtime_s16.h"

static inline mcu_s32x4 rounding_shift(mcu_s32x4 value, int32_t shift) {
    if (shift >= 0) {
        return value;
    }
    return mcu_vrshl_r_s32(mcu_vqadd_s32(value, mcu_vsign_s32(value)), shift);
}

static inline mcu_s32x4 scaled(mcu_s32x4 value, int32_t multiplier, int32_t shift) {
    return rounding_shift(mcu_vqrdmulh_n_s32(value, multiplier), shift);
}

mcu_status mcu_add_s16_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                           const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    if (!mcu_s16_add_arguments_valid(params, quant, in1_dims, in1, in2_dims, in2, out_dims, out)
        || quant->output_shift < -31) {
        return mcu_add_s16(ctx, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out);
    }
    mcu_s32x4 low = mcu_vdup_s32(params->activation.min), high = mcu_vdup_s32(params->activation.max);
    int32_t count = mcu_dims_count(out_dims);
    for (int32_t index = 0; index < count; index += 4) {
        mcu_pred pred = mcu_vctp32(count - index);
        mcu_s32x4 a = mcu_vshl_r_s32(mcu_vld_s16_s32_z(in1 + index, pred), 15);
        mcu_s32x4 b = mcu_vshl_r_s32(mcu_vld_s16_s32_z(in2 + index, pred), 15);
        mcu_s32x4 sum = mcu_vadd_s32(scaled(a, quant->input1_multiplier, quant->input1_shift),
                                     scaled(b, quant->input2_multiplier, quant->input2_shift));
        mcu_s32x4 result = scaled(sum, quant->output_multiplier, quant->output_shift);
        mcu_vst_s32_as_s16_p(out + index, mcu_vmin_s32(mcu_vmax_s32(result, low), high), pred);
    }
    return MCU_OK;
}
