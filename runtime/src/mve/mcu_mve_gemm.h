/*
 * mcu_mve_gemm.h - the dot products and output stage shared by the _mve conv and fully
 * connected kernels (internal header).
 *
 * One or two int8 columns of Kp = ceil16(K) values (pixels, or input rows) times every
 * weight row, in blocks of four output channels ("quad rows", mcu_runtime_mve.h: the rows
 * 4b..4b+3 interleaved 16 bytes at a time):
 *
 *   out0[o] = clamp(mbqm(bias'[o] + sum_k column0[k] * W[o, k], multiplier[o], shift[o]) + offset)
 *   out1[o] = the same for column 1, when out1 != NULL
 *
 * bias' has the input offset folded in (the columns hold raw int8 inputs; padding taps hold
 * the input zero point, the K..Kp tail anything: its weights are 0). Per 16 k a 2 x 4 block
 * costs 2 + 4 loads and 8 VMLADAVA (128 MACs).
 */
#ifndef MCU_MVE_GEMM_H
#define MCU_MVE_GEMM_H

#include "mcu_mve_internal.h"

typedef struct {
    const int32_t *multiplier;   /* [O] */
    const int32_t *shift;        /* [O] */
    const int32_t *bias;         /* [O] bias' (never NULL unless packed) */
    const int32_t *packed;       /* NULL, or per block of four channels bias'[4], multiplier[4], shift[4]
                                  * (the im2col conv, mcu_runtime_mve.h): read instead of the three */
    int32_t output_offset;
    mcu_activation activation;
    int32_t right_shifts;        /* mcu_mve_all_right_shifts(shift, O): the cheaper requantization */
} mcu_mve_gemm_output;

typedef void (*mcu_mve_gemm_function)(const mcu_mve_gemm_output *output, const int8_t *column0,
                                      const int8_t *column1, const int8_t *w, int32_t row, int32_t channels,
                                      int8_t *out0, int8_t *out1);

void mcu_mve_gemm(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                  const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1);
/* mcu_mve_gemm for 1..3 channels (a classifier's last layer): the remainder block alone, without
 * the register saves of the four-channel blocks (two thirds of a 16 -> 2 layer's instructions). */
void mcu_mve_gemm_few(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                      const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1);
/* The one of the two for `channels` outputs (fewer than four: mcu_mve_gemm_few). */
static inline mcu_mve_gemm_function mcu_mve_gemm_for(int32_t channels) {
    return channels < 4 ? mcu_mve_gemm_few : mcu_mve_gemm;
}
/* The same with output->packed (not NULL) read instead of bias / multiplier / shift. */
void mcu_mve_gemm_packed(const mcu_mve_gemm_output *output, const int8_t *column0, const int8_t *column1,
                         const int8_t *w, int32_t row, int32_t channels, int8_t *out0, int8_t *out1);

#endif /* MCU_MVE_GEMM_H */
