/*
 * mcu_runtime_s16.h - 16x8 kernel variants (int16 activations, int8 weights, int64 bias):
 * _dsp for cores with the DSP extension (Cortex-M4, M7, M33, M55; src/dsp/ *_s16_dsp.c) and
 * _mve for Helium (Cortex-M55, M85; src/mve/ *_s16_mve.c).
 *
 * Same API as the reference 16x8 kernels of mcu_runtime.h (name + "_dsp" / "_mve"), same
 * results bit for bit (TFLite's 16x8 arithmetic, src/mcu_s16_variants.h), different weight
 * layouts, prepared offline by mcudeploy (src/mcudeploy/kernels/s16_dsp.py, s16_mve.py).
 * Without the instructions (host, M0+ / M3) the same sources compile to portable C with the
 * same results. A call the variant does not cover (non-zero offsets, a depth multiplier
 * other than 1) runs the reference kernel with the reference layout's meaning of `w` only
 * where the two layouts agree (documented per kernel); mcudeploy never emits such a call.
 *
 * DSP weight layouts. "s16 quads": a row of K int8 values, each group of four k = 4g..4g+3
 * stored as (4g, 4g+2, 4g+1, 4g+3) (SXTB16 / SXTB16 ROR 8 split it into the pairs (4g, 4g+1)
 * and (4g+2, 4g+3)), the K % 4 tail plain. "s16 quad pairs" (conv rows [O, kH*kW*C], fully
 * connected rows [N, K]): rows 2q and 2q+1 in quads, interleaved four bytes at a time (bytes
 * 8g..8g+3 = row 2q's group g, 8g+4..8g+7 = row 2q+1's), then row 2q's tail, then row
 * 2q+1's; an odd last row in plain quads (2K bytes per pair, O * K in all). Depthwise:
 * taps-major [kH*kW, C], each tap's C channels a row in quads.
 * MVE layouts: conv / fully connected rows as the reference's ([O, K]); depthwise taps-major
 * [kH*kW, C].
 */
#ifndef MCU_RUNTIME_S16_H
#define MCU_RUNTIME_S16_H

#include "mcu_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Conv, groups = 1. Scratch: two int16 columns of K = kH*kW*C values (4 * K bytes), none for
 * a pointwise conv (1x1, stride 1, no padding), which reads its input rows in place. */
#define MCU_CONV2D_S16_SCRATCH_BYTES(depth) (2 * (depth) * 2)   /* depth K = kH * kW * C; DSP and MVE alike */
int32_t mcu_conv2d_s16_dsp_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                        const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_conv2d_s16_dsp(const mcu_context *ctx, const mcu_conv_params *params,
                              const mcu_channel_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                              const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                              const mcu_dims *out_dims, int16_t *out);
int32_t mcu_conv2d_s16_mve_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                        const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_conv2d_s16_mve(const mcu_context *ctx, const mcu_conv_params *params,
                              const mcu_channel_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                              const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                              const mcu_dims *out_dims, int16_t *out);

/* Depthwise conv, depth multiplier 1, at most 504 taps (kH*kW). No scratch. */
mcu_status mcu_depthwise_conv2d_s16_dsp(const mcu_context *ctx, const mcu_depthwise_params *params,
                                        const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                        const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                        const int64_t *bias, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_depthwise_conv2d_s16_mve(const mcu_context *ctx, const mcu_depthwise_params *params,
                                        const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                        const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                        const int64_t *bias, const mcu_dims *out_dims, int16_t *out);

/* Fully connected, symmetric weights (weights_offset 0). No scratch. */
mcu_status mcu_fully_connected_s16_dsp(const mcu_context *ctx, const mcu_fc_params *params,
                                       const mcu_fc_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                                       const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                                       const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_fully_connected_s16_mve(const mcu_context *ctx, const mcu_fc_params *params,
                                       const mcu_fc_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                                       const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                                       const mcu_dims *out_dims, int16_t *out);

/* Add of two tensors of the output's shape (no broadcasting; left_shift 15). Anything else
 * runs the reference mcu_add_s16. No scratch. */
mcu_status mcu_add_s16_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                           const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_add_s16_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                           const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MCU_RUNTIME_S16_H */
