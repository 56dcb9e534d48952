/*
 * mcu_dsp_gemm.h - the output stage shared by the _dsp conv and fully connected kernels
 * (internal header): one or two q15 columns (an interleaved pair, mcu_dsp_dot.h) times every
 * paired weight row, requantized and stored.
 *
 *   out0[o] = clamp(mbqm(bias[o] + column 0 . row o, multiplier[o], shift[o]) + output_offset)
 *   out1[o] = the same for column 1 (the next pixel / row), when out1 != NULL
 *
 * Three versions (gemm_dsp.c; the quad stage below has the same three): one for calls whose channels are all "simple"
 * (mcu_dsp_all_simple: left 1 and mask -1 become constants), one for any channel, and the
 * "saturating" one: simple, every shift -1..-22 and no activation clamp (min -128, max 127):
 * the output offset folded into the rounding term, which the floor of the shift carries
 * through exactly (|value + round| < 2^31 for right <= 22), then SSAT to int8:
 *
 *   out = ssat8(floor((smmulr(2 acc, m) + 2^(right-1) + offset * 2^right - [negative]) / 2^right))
 */
#ifndef MCU_DSP_GEMM_H
#define MCU_DSP_GEMM_H

#include "mcu_dsp_internal.h"

typedef struct {
    const int32_t *multiplier;   /* [O] */
    const int32_t *shift;        /* [O] */
    int32_t output_offset;
    const int32_t *bias;         /* [O] or NULL */
    mcu_activation activation;
    int32_t reach;               /* mcu_dsp_reach(K) */
} mcu_dsp_gemm_output;

/* bias[channel], or 0 without a bias. */
static inline int32_t mcu_dsp_bias_of(const mcu_dsp_gemm_output *output, int32_t channel) {
    return output->bias != NULL ? output->bias[channel] : 0;
}

typedef void (*mcu_dsp_gemm_function)(const mcu_dsp_gemm_output *output, const int16_t *columns,
                                      const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1);

void mcu_dsp_gemm_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *out0, int8_t *out1);
void mcu_dsp_gemm_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                          int32_t row, int32_t channels, int8_t *out0, int8_t *out1);
void mcu_dsp_gemm_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                             int32_t row, int32_t channels, int8_t *out0, int8_t *out1);

/* Whether every shift is -22 or more (the saturating version's folded offset). */
static inline int32_t mcu_dsp_shifts_small(const int32_t *shift, int32_t channels) {
    for (int32_t c = 0; c < channels; ++c) {
        if (shift[c] < -22) {
            return 0;
        }
    }
    return 1;
}

/* The version for this call: saturating or simple when every one of `channels` channels is. */
static inline mcu_dsp_gemm_function mcu_dsp_gemm_for(const mcu_dsp_gemm_output *output, int32_t channels) {
    if (!mcu_dsp_all_simple(output->shift, output->bias, channels, output->reach)) {
        return mcu_dsp_gemm_general;
    }
    int32_t clamps = output->activation.min > -128 || output->activation.max < 127;
    return !clamps && mcu_dsp_shifts_small(output->shift, channels) ? mcu_dsp_gemm_saturating : mcu_dsp_gemm_simple;
}

/* The quad stage (gemm_quad_dsp.c): four columns interleaved by group (column c's group g
 * at halfword 16g + 4c) times plain weight rows, one output channel at a time; out[p] =
 * pixel p's output (out[0] again for the pixels a last block lacks). */
typedef void (*mcu_dsp_quad_function)(const mcu_dsp_gemm_output *output, const int16_t *columns,
                                      const int8_t *w, int32_t row, int32_t channels, int8_t *const out[4]);

void mcu_dsp_quad_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                             int32_t row, int32_t channels, int8_t *const out[4]);
void mcu_dsp_quad_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w, int32_t row,
                         int32_t channels, int8_t *const out[4]);
void mcu_dsp_quad_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                          int32_t row, int32_t channels, int8_t *const out[4]);

/* The triple stage: the same with three columns (column c's group g at halfword 12g + 4c);
 * out[3] is not written. */
void mcu_dsp_triple_saturating(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                               int32_t row, int32_t channels, int8_t *const out[4]);
void mcu_dsp_triple_simple(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                           int32_t row, int32_t channels, int8_t *const out[4]);
void mcu_dsp_triple_general(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                            int32_t row, int32_t channels, int8_t *const out[4]);

/* The quad's channel loops in asm (bias != NULL, every channel simple, shifts -1..-22, the
 * offset folded into the rounding term): without an activation clamp, and with one (SSUB8 +
 * SEL on the four pixels' bytes). */
void mcu_dsp_quad_saturating_fast(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                                  int32_t row, int32_t channels, int8_t *const out[4]);
void mcu_dsp_quad_clamped_fast(const mcu_dsp_gemm_output *output, const int16_t *columns, const int8_t *w,
                               int32_t row, int32_t channels, int8_t *const out[4]);

/* The quad (pixels 4) or triple (3) version for this call, by the rules of mcu_dsp_gemm_for. */
static inline mcu_dsp_quad_function mcu_dsp_quad_for(const mcu_dsp_gemm_output *output, int32_t channels,
                                                     int32_t pixels) {
    mcu_dsp_gemm_function pair = mcu_dsp_gemm_for(output, channels);
    int32_t fast = pixels == 4 && output->bias != NULL && mcu_dsp_shifts_small(output->shift, channels);
    if (pair == mcu_dsp_gemm_general) {
        return pixels == 4 ? mcu_dsp_quad_general : mcu_dsp_triple_general;
    }
    if (pair == mcu_dsp_gemm_saturating) {
        return fast ? mcu_dsp_quad_saturating_fast : pixels == 4 ? mcu_dsp_quad_saturating : mcu_dsp_triple_saturating;
    }
    return fast ? mcu_dsp_quad_clamped_fast : pixels == 4 ? mcu_dsp_quad_simple : mcu_dsp_triple_simple;
}

#endif /* MCU_DSP_GEMM_H */
