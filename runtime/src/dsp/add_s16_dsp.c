/*
 * add_s16_dsp.c - mcu_add_s16_dsp: 16x8 Add of two int16 tensors of the same shape (no
 * broadcasting, zero points 0, left_shift 15) for cores with the DSP extension.
 *
 * TFLite's int16 Add per element (mcu_fixed_point.h), with the input stage in SMMULR:
 *
 *   a = rdbpot(srdhm(A << 15, m1), -s1)   with srdhm(A << 15, m1) = smmulr(A << 16, m1)
 *       (exact: A << 16 fits int32 for every int16 A, and SMMULR keeps the whole product)
 *   b likewise;  Y = clamp(rdbpot(srdhm(a + b, mo), -so))
 *
 * |srdhm(A << 15, m)| <= m / 2 + 1, so |a| <= ((m1 / 2 + 1) >> -s1) + 1 (likewise b): when
 * that bound of |a + b| is below 2^30 (TFLite's multipliers, real value <= 1/2, always give
 * it), srdhm(a + b, mo) = smmulr((a + b) << 1, mo) and the rounding shift stays in int32;
 * otherwise the 64-bit forms of mcu_fixed_point.h (exact for any a + b).
 *
 * Two elements per step (one word of each input). Access order: element i is written after
 * elements i, i + 1 of both inputs are read (the reference's in-place proof holds). Anything
 * else (broadcasting, offsets) runs the reference mcu_add_s16.
 */
#include "mcu_dsp_simd.h"
#include "mcu_runtime_s16.h"
#include "mcu_s16_variants.h"

typedef struct {
    int32_t multiplier, right, round, mask;
} rounding_scale;

static rounding_scale scale_of(int32_t multiplier, int32_t shift) {
    int32_t right = -shift;   /* >= 0; above 31 only for the output (then the 64-bit path) */
    rounding_scale scale = {multiplier, right, right > 31 ? 0 : (int32_t)(((uint32_t)1 << right) >> 1), -(shift < 0)};
    return scale;
}

/* rdbpot(v, right) with the sign fix-up of a negative v folded into the rounding. */
static inline int32_t round_shift(int32_t value, const rounding_scale *scale) {
    return (value + scale->round + ((value >> 31) & scale->mask)) >> scale->right;
}

static inline int32_t input_scaled(int32_t value, const rounding_scale *scale) {
    return round_shift(mcu_smmulr((int32_t)((uint32_t)value << 16), scale->multiplier), scale);
}

static inline int16_t add_one(const rounding_scale scales[3], const mcu_activation *activation, int32_t narrow,
                              int32_t a, int32_t b) {
    int32_t sum = input_scaled(a, &scales[0]) + input_scaled(b, &scales[1]);
    if (narrow) {
        int32_t high = mcu_smmulr((int32_t)((uint32_t)sum << 1), scales[2].multiplier);
        return (int16_t)mcu_clamp(round_shift(high, &scales[2]), activation->min, activation->max);
    }
    int32_t high = mcu_srdhm(sum, scales[2].multiplier);
    return (int16_t)mcu_clamp(mcu_rdbpot(high, scales[2].right), activation->min, activation->max);
}

/* The bound of |a| above for one input scale. */
static int64_t scaled_bound(const rounding_scale *scale) {
    return ((((int64_t)scale->multiplier >> 1) + 1) >> scale->right) + 1;
}

mcu_status mcu_add_s16_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                           const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out) {
    if (!mcu_s16_add_arguments_valid(params, quant, in1_dims, in1, in2_dims, in2, out_dims, out)) {
        return mcu_add_s16(ctx, params, quant, in1_dims, in1, in2_dims, in2, out_dims, out);
    }
    rounding_scale scales[3] = {scale_of(quant->input1_multiplier, quant->input1_shift),
                                scale_of(quant->input2_multiplier, quant->input2_shift),
                                scale_of(quant->output_multiplier, quant->output_shift)};
    int32_t narrow = scaled_bound(&scales[0]) + scaled_bound(&scales[1]) < ((int64_t)1 << 30)
                     && quant->output_shift >= -31;
    int32_t count = mcu_dims_count(out_dims), index = 0;
    for (; index + 1 < count; index += 2) {
        int32_t a = mcu_read32(in1 + index), b = mcu_read32(in2 + index);
        int16_t first = add_one(scales, &params->activation, narrow, (int16_t)(uint16_t)((uint32_t)a & 0xFFFFu),
                                (int16_t)(uint16_t)((uint32_t)b & 0xFFFFu));
        int16_t second = add_one(scales, &params->activation, narrow, a >> 16, b >> 16);
        mcu_write32(out + index, (int32_t)((uint32_t)(uint16_t)second << 16 | (uint16_t)first));
    }
    if (index < count) {
        out[index] = add_one(scales, &params->activation, narrow, in1[index], in2[index]);
    }
    return MCU_OK;
}
