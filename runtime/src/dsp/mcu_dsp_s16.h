/*
 * mcu_dsp_s16.h - the dot-product core of the 16x8 _dsp kernels (internal header;
 * gemm_s16_dsp.c): a 2x2 block, two int16 columns (pixels / rows) x two weight rows in the
 * "s16 quad pairs" layout (mcu_runtime_s16.h), per four k 2 LDR of each column, 1 LDR + 2
 * SXTB16 of each row and 8 SMLAD:
 *
 *   sums[2p + r] = sum_k X_p[k] * W_r[k]      (int32 chunks of <= 504 k, summed in int64)
 */
#ifndef MCU_DSP_S16_H
#define MCU_DSP_S16_H

#include "mcu_dsp_simd.h"
#include "mcu_s16_variants.h"

/* `w`: the pair of rows (2K bytes) or, `pair` = 0, one row alone (K bytes; sums 1 and 3 repeat 0 and 2). */
void mcu_s16_dsp_block(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t depth, int32_t pair,
                       int64_t sums[4]);

/* Output channels o, o + 1 (`pair`: o + 1 exists) of two pixels (`second`: pixel 1 exists)
 * from one 2x2 block's sums. */
static inline void mcu_s16_dsp_store(const int64_t sums[4], const int64_t *bias, const mcu_channel_quant *quant,
                                     const mcu_activation *activation, int32_t o, int32_t pair, int32_t second,
                                     int16_t *out0, int16_t *out1) {
    out0[o] = mcu_s16_output(sums[0], bias, quant, o, activation);
    if (pair) {
        out0[o + 1] = mcu_s16_output(sums[1], bias, quant, o + 1, activation);
    }
    if (second) {
        out1[o] = mcu_s16_output(sums[2], bias, quant, o, activation);
        if (pair) {
            out1[o + 1] = mcu_s16_output(sums[3], bias, quant, o + 1, activation);
        }
    }
}

#endif /* MCU_DSP_S16_H */
