/*
 * gemm_dsp.c - the output stage of the _dsp conv and fully connected kernels
 * (mcu_dsp_gemm.h): 2x2 blocks of (2 columns x 2 paired rows), their remainders, and the
 * requantization of every output, in a "saturating", a "simple" and a general version.
 */
#include "mcu_dsp_dot.h"
#include "mcu_dsp_gemm.h"

/* The scale of `channel`; `simple` (a constant after inlining): every channel is simple. */
MCU_DSP_INLINE mcu_dsp_scale scale_of(const mcu_dsp_gemm_output *output, int32_t channel, int32_t simple) {
    if (simple) {
        return mcu_dsp_simple_scale_of(output->multiplier[channel], output->shift[channel]);
    }
    return mcu_dsp_scale_of(output->multiplier[channel], output->shift[channel], mcu_dsp_bias_of(output, channel),
                            output->reach);
}

MCU_DSP_INLINE int8_t requantize(const mcu_dsp_gemm_output *output, int32_t acc, const mcu_dsp_scale *scale) {
    return mcu_dsp_output_any(acc, scale, output->output_offset, output->activation.min, output->activation.max);
}

/* A saturating channel (mcu_dsp_gemm.h): the rounding term with the output offset in it. */
typedef struct {
    int32_t multiplier, round, right;
} saturating_scale;

MCU_DSP_INLINE saturating_scale saturating_of(const mcu_dsp_gemm_output *output, int32_t channel) {
    saturating_scale scale;
    scale.multiplier = output->multiplier[channel];
    scale.right = -output->shift[channel];
    scale.round = (int32_t)(((uint32_t)1 << (scale.right - 1)) + ((uint32_t)output->output_offset << scale.right));
    return scale;
}

/* floor((smmulr(2 acc, m) + round - [negative]) / 2^right) saturated to int8 = the output. */
MCU_DSP_INLINE int8_t saturated(int32_t acc, const saturating_scale *scale) {
    int32_t value = mcu_smmulr((int32_t)((uint32_t)acc << 1), scale->multiplier);
    return (int8_t)mcu_ssat8((value + scale->round + (value >> 31)) >> scale->right);
}

/* Channels o, o+1 of both columns (or of column 0 when out1 is NULL), saturating stage. */
MCU_DSP_INLINE void pair_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *rows,
                                    int32_t groups, int32_t o, int8_t *out0, int8_t *out1) {
    saturating_scale scale_a = saturating_of(output, o), scale_b = saturating_of(output, o + 1);
    int32_t acc[4] = {mcu_dsp_bias_of(output, o), mcu_dsp_bias_of(output, o + 1), 0, 0};
    if (out1 != NULL) {
        acc[2] = acc[0];
        acc[3] = acc[1];
        mcu_dsp_dot_2x2(columns, rows, groups, acc);
        out1[o] = saturated(acc[2], &scale_a);
        out1[o + 1] = saturated(acc[3], &scale_b);
    } else {
        mcu_dsp_dot_1x2(columns, rows, groups, acc);
    }
    out0[o] = saturated(acc[0], &scale_a);
    out0[o + 1] = saturated(acc[1], &scale_b);
}

MCU_DSP_INLINE void gemm(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *out0, int8_t *out1, int32_t simple, int32_t saturating) {
    int32_t groups = row / 4, o = 0;
    for (; o + 1 < channels; o += 2) {
        const int8_t *rows = w + o * row;
        if (saturating) {
            pair_saturating(output, columns, rows, groups, o, out0, out1);
            continue;
        }
        mcu_dsp_scale scale_a = scale_of(output, o, simple), scale_b = scale_of(output, o + 1, simple);
        int32_t acc[4] = {mcu_dsp_bias_of(output, o), mcu_dsp_bias_of(output, o + 1), 0, 0};
        if (out1 != NULL) {
            acc[2] = acc[0];
            acc[3] = acc[1];
            mcu_dsp_dot_2x2(columns, rows, groups, acc);
            out1[o] = requantize(output, acc[2], &scale_a);
            out1[o + 1] = requantize(output, acc[3], &scale_b);
        } else {
            mcu_dsp_dot_1x2(columns, rows, groups, acc);
        }
        out0[o] = requantize(output, acc[0], &scale_a);
        out0[o + 1] = requantize(output, acc[1], &scale_b);
    }
    if (o < channels) {
        mcu_dsp_scale scale = scale_of(output, o, simple);
        int32_t acc[2] = {mcu_dsp_bias_of(output, o), mcu_dsp_bias_of(output, o)};
        if (out1 != NULL) {
            mcu_dsp_dot_2x1(columns, w + o * row, groups, acc);
            out1[o] = requantize(output, acc[1], &scale);
        } else {
            acc[0] = mcu_dsp_dot_1x1(columns, w + o * row, groups, acc[0]);
        }
        out0[o] = requantize(output, acc[0], &scale);
    }
}

void mcu_dsp_gemm_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                             int32_t row, int32_t channels, int8_t *out0, int8_t *out1) {
    gemm(output, columns, w, row, channels, out0, out1, 1, 1);
}

void mcu_dsp_gemm_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *out0, int8_t *out1) {
    gemm(output, columns, w, row, channels, out0, out1, 1, 0);
}

void mcu_dsp_gemm_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                          int32_t row, int32_t channels, int8_t *out0, int8_t *out1) {
    gemm(output, columns, w, row, channels, out0, out1, 0, 0);
}
