/*
 * elementwise_dsp.c - mcu_add_s8_dsp, mcu_mul_s8_dsp: int8 Add and Mul of two tensors of the
 * same shape (no broadcasting) for cores with the DSP extension.
 *
 * Four elements per step: one word of each input, the input offsets added to two elements
 * at a time by SXTAB16, then TFLite's arithmetic per element with SMMULR (exact here: every
 * product stays below 2^30, see below), the outputs packed into one word:
 *
 *   Add: a = rdbpot(srdhm((A + off1) << ls, m1), -s1),  b likewise,
 *        Y = clamp(rdbpot(srdhm(a + b, mo), -so) + off_out)
 *        |A + off1| <= 255 and ls <= 21 (checked) keep (A + off1) << ls below 2^29 and
 *        a + b below 2^30, so srdhm(v, m) = smmulr(2v, m).
 *   Mul: Y = clamp(mbqm((A + off1) * (B + off2), m, s) + off_out)
 *        |product| <= 65536; shift <= 13 (checked) keeps it << max(s, 0) below 2^30.
 *
 * Access order: element i of the output is written after elements i..i+3 of both inputs
 * are read, and never before element i of either is read (in-place with either input is
 * safe: the reference's proof holds). Out c_stride (mcu_runtime.h): pixel p's C outputs at
 * element p * c_stride, one run of C elements per pixel (one run of all when dense).
 */
#include "mcu_dsp_internal.h"
#include "mcu_variants.h"
#include "mcu_runtime_dsp.h"

/* srdhm(value << left, multiplier), then rdbpot(., right): the exact add-path scale for
 * |value << left| < 2^30 (left is the shift before the doubling). */
typedef struct {
    int32_t multiplier, left, right, round, mask;
} add_scale;

static add_scale add_scale_of(int32_t multiplier, int32_t left, int32_t shift) {
    add_scale scale;
    int32_t right = -shift;
    scale.multiplier = multiplier;
    scale.left = left + 1;
    scale.right = right;
    scale.round = (int32_t)(((uint32_t)1 << right) >> 1);
    scale.mask = -(right > 0);
    return scale;
}

MCU_DSP_INLINE int32_t add_scale_apply(int32_t value, const add_scale *scale) {
    int32_t scaled = mcu_smmulr((int32_t)((uint32_t)value << scale->left), scale->multiplier);
    return (scaled + scale->round + ((scaled >> 31) & scale->mask)) >> scale->right;
}

typedef struct {
    add_scale first, second, output;
    int32_t output_offset, low, high;
} add_plan;

MCU_DSP_INLINE int32_t add_one(const add_plan *plan, int32_t a, int32_t b) {
    int32_t sum = add_scale_apply(a, &plan->first) + add_scale_apply(b, &plan->second);
    return mcu_clamp(add_scale_apply(sum, &plan->output) + plan->output_offset, plan->low, plan->high);
}

/* The low / high half of a packed pair, sign-extended. */
MCU_DSP_INLINE int32_t low_half(int32_t pair) {
    return (int16_t)(uint16_t)((uint32_t)pair & 0xFFFFu);
}

MCU_DSP_INLINE int32_t high_half(int32_t pair) {
    return pair >> 16;
}

MCU_DSP_INLINE int32_t pack4(int32_t y0, int32_t y1, int32_t y2, int32_t y3) {
    return (int32_t)(((uint32_t)(uint8_t)y0) | ((uint32_t)(uint8_t)y1 << 8) | ((uint32_t)(uint8_t)y2 << 16)
                     | ((uint32_t)(uint8_t)y3 << 24));
}

static void add_run(const add_plan *plan, const int32_t offsets[2], const int8_t *in1, const int8_t *in2,
                    int8_t *out, int32_t count) {
    int32_t index = 0;
    int32_t offset1 = mcu_dsp_pair(offsets[0]), offset2 = mcu_dsp_pair(offsets[1]);
    for (; index + 4 <= count; index += 4) {
        int32_t a = mcu_read32(in1 + index), b = mcu_read32(in2 + index);
        int32_t a02 = mcu_sxtab16(offset1, a), a13 = mcu_sxtab16_ror8(offset1, a);
        int32_t b02 = mcu_sxtab16(offset2, b), b13 = mcu_sxtab16_ror8(offset2, b);
        mcu_write32(out + index, pack4(add_one(plan, low_half(a02), low_half(b02)),
                                       add_one(plan, low_half(a13), low_half(b13)),
                                       add_one(plan, high_half(a02), high_half(b02)),
                                       add_one(plan, high_half(a13), high_half(b13))));
    }
    for (; index < count; ++index) {
        out[index] = (int8_t)add_one(plan, in1[index] + offsets[0], in2[index] + offsets[1]);
    }
}

mcu_status mcu_add_s8_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_same_shape_arguments_valid(params, in1_dims, in1, in2_dims, in2, out_dims, out) || quant->left_shift < 0
        || quant->left_shift > 21 || quant->input1_shift > 0 || quant->input2_shift > 0 || quant->output_shift > 0
        || quant->input1_offset < -128 || quant->input1_offset > 128 || quant->input2_offset < -128
        || quant->input2_offset > 128) {
        return MCU_ERR_ARG;
    }
    add_plan plan = {add_scale_of(quant->input1_multiplier, quant->left_shift, quant->input1_shift),
                     add_scale_of(quant->input2_multiplier, quant->left_shift, quant->input2_shift),
                     add_scale_of(quant->output_multiplier, 0, quant->output_shift), quant->output_offset,
                     params->activation.min, params->activation.max};
    const int32_t offsets[2] = {quant->input1_offset, quant->input2_offset};
    int32_t run = out_dims->c_stride > 0 ? out_dims->c : mcu_dims_count(out_dims);
    int32_t stride = out_dims->c_stride > 0 ? out_dims->c_stride : run;
    for (int32_t first = 0, row = 0; first < mcu_dims_count(out_dims); first += run, ++row) {
        add_run(&plan, offsets, in1 + first, in2 + first, out + row * stride, run);
    }
    return MCU_OK;
}

typedef struct {
    mcu_dsp_scale scale;
    int32_t output_offset, low, high;
} mul_plan;

MCU_DSP_INLINE int32_t mul_one(const mul_plan *plan, int32_t product) {
    return mcu_clamp(mcu_dsp_requantize(product, &plan->scale) + plan->output_offset, plan->low, plan->high);
}

static void mul_run(const mul_plan *plan, const int32_t offsets[2], const int8_t *in1, const int8_t *in2,
                    int8_t *out, int32_t count) {
    int32_t index = 0;
    int32_t offset1 = mcu_dsp_pair(offsets[0]), offset2 = mcu_dsp_pair(offsets[1]);
    for (; index + 4 <= count; index += 4) {
        int32_t a = mcu_read32(in1 + index), b = mcu_read32(in2 + index);
        int32_t a02 = mcu_sxtab16(offset1, a), a13 = mcu_sxtab16_ror8(offset1, a);
        int32_t b02 = mcu_sxtab16(offset2, b), b13 = mcu_sxtab16_ror8(offset2, b);
        mcu_write32(out + index, pack4(mul_one(plan, mcu_smlabb(a02, b02, 0)), mul_one(plan, mcu_smlabb(a13, b13, 0)),
                                       mul_one(plan, mcu_smlatt(a02, b02, 0)), mul_one(plan, mcu_smlatt(a13, b13, 0))));
    }
    for (; index < count; ++index) {
        int32_t product = (in1[index] + offsets[0]) * (in2[index] + offsets[1]);
        out[index] = (int8_t)mul_one(plan, product);
    }
}

mcu_status mcu_mul_s8_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_same_shape_arguments_valid(params, in1_dims, in1, in2_dims, in2, out_dims, out)
        || quant->output_shift > 13 || quant->output_multiplier < 0 || quant->input1_offset < -128
        || quant->input1_offset > 128 || quant->input2_offset < -128 || quant->input2_offset > 128) {
        return MCU_ERR_ARG;
    }
    mul_plan plan = {mcu_dsp_scale_of(quant->output_multiplier, quant->output_shift, 0, 0), quant->output_offset,
                     params->activation.min, params->activation.max};
    const int32_t offsets[2] = {quant->input1_offset, quant->input2_offset};
    int32_t run = out_dims->c_stride > 0 ? out_dims->c : mcu_dims_count(out_dims);
    int32_t stride = out_dims->c_stride > 0 ? out_dims->c_stride : run;
    for (int32_t first = 0, row = 0; first < mcu_dims_count(out_dims); first += run, ++row) {
        mul_run(&plan, offsets, in1 + first, in2 + first, out + row * stride, run);
    }
    return MCU_OK;
}
