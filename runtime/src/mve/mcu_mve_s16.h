/*
 * mcu_mve_s16.h - the 16x8 _mve kernels' extra Helium instructions (beside mcu_mve_simd.h)
 * and their dot-product core (internal header; gemm_s16_mve.c).
 *
 *   vld_s16_z(p, pred)        = 8 int16 lanes, inactive lanes 0            (VLDRH.S16)
 *   vld_s16_s32_z(p, pred)    = 4 int16 widened to int32 lanes             (VLDRH.S32)
 *   vst_s32_as_s16_p(p, v, .) = the low halves of 4 int32 lanes            (VSTRH.32)
 *   vmladava_s16(acc, a, b)   = acc + sum_i a[i]*b[i]                      (VMLADAVA.S16, mod 2^32)
 *
 * Core: a 2x4 block, two int16 columns x four weight rows in the "s16 quad octets" layout
 * (rows padded to Kp = ceil8(K) and O to a multiple of 4, each block of four rows
 * interleaved 8 bytes at a time: byte 32g + 8r + i = row r, k = 8g + i), per eight k 2
 * VLDRH, 4 VLDRB.S16 and 8 VMLADAVA.S16; int32 chunks of <= 504 k summed in int64
 * (mcu_s16_variants.h); the columns' K % 8 tail loaded with a predicate (never read past K).
 */
#ifndef MCU_MVE_S16_H
#define MCU_MVE_S16_H

#include "mcu_mve_simd.h"
#include "mcu_s16_variants.h"

#if MCU_MVE_NATIVE
static inline mcu_s16x8 mcu_vld_s16_z(const int16_t *p, mcu_pred pred) { return vldrhq_z_s16(p, pred); }
static inline mcu_s16x8 mcu_vld_s16(const int16_t *p) { return vldrhq_s16(p); }
static inline mcu_s32x4 mcu_vld_s16_s32_z(const int16_t *p, mcu_pred pred) { return vldrhq_z_s32(p, pred); }
static inline void mcu_vst_s32_as_s16_p(int16_t *p, mcu_s32x4 v, mcu_pred pred) { vstrhq_p_s32(p, v, pred); }
static inline int32_t mcu_vmladava_s16(int32_t acc, mcu_s16x8 a, mcu_s16x8 b) { return vmladavaq_s16(acc, a, b); }
#else
static inline mcu_s16x8 mcu_vld_s16_z(const int16_t *p, mcu_pred pred) {
    mcu_s16x8 v;
    for (int32_t i = 0; i < 8; ++i) {
        v.lane[i] = mcu_active(pred, i, 2) ? p[i] : 0;
    }
    return v;
}
static inline mcu_s16x8 mcu_vld_s16(const int16_t *p) { return mcu_vld_s16_z(p, 0xFFFFu); }
static inline mcu_s32x4 mcu_vld_s16_s32_z(const int16_t *p, mcu_pred pred) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = mcu_active(pred, i, 4) ? p[i] : 0;
    }
    return v;
}
static inline void mcu_vst_s32_as_s16_p(int16_t *p, mcu_s32x4 v, mcu_pred pred) {
    for (int32_t i = 0; i < 4; ++i) {
        if (mcu_active(pred, i, 4)) {
            p[i] = (int16_t)(uint16_t)(uint32_t)v.lane[i];
        }
    }
}
static inline int32_t mcu_vmladava_s16(int32_t acc, mcu_s16x8 a, mcu_s16x8 b) {
    uint32_t total = (uint32_t)acc;
    for (int32_t i = 0; i < 8; ++i) {
        total += (uint32_t)(a.lane[i] * b.lane[i]);
    }
    return (int32_t)total;
}
#endif

/* sums[4p + r] = sum_k X_p[k] * W[o0 + r, k] for the block of four rows at `w` (its 4 * Kp bytes). */
void mcu_s16_mve_block(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t depth, int64_t sums[8]);

/* Outputs o0 .. o0 + 3 (< channels) of two pixels (`second`: pixel 1 exists). */
static inline void mcu_s16_mve_store(const int64_t sums[8], const int64_t *bias, const mcu_channel_quant *quant,
                                     const mcu_activation *activation, int32_t o0, int32_t channels, int32_t second,
                                     int16_t *out0, int16_t *out1) {
    for (int32_t r = 0; r < 4 && o0 + r < channels; ++r) {
        out0[o0 + r] = mcu_s16_output(sums[r], bias, quant, o0 + r, activation);
        if (second) {
            out1[o0 + r] = mcu_s16_output(sums[4 + r], bias, quant, o0 + r, activation);
        }
    }
}

/* Bytes of one block of four rows: 4 * ceil8(K). */
static inline int32_t mcu_s16_mve_block_bytes(int32_t depth) {
    return 4 * ((depth + 7) / 8 * 8);
}

#endif /* MCU_MVE_S16_H */
