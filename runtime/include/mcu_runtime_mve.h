/*
 * mcu_runtime_mve.h - kernel variants for Cortex-M cores with the M-profile Vector
 * Extension (MVE, "Helium": Cortex-M55, M85).
 *
 * Same API shape as mcu_runtime.h (name + "_mve"), same results bit for bit, different
 * weight and bias layouts, prepared offline by mcudeploy (src/mcudeploy/kernels/mve.py) and
 * documented per kernel below. Built without MVE (the host, other cores) the same sources
 * compile to portable C with the same results (src/mve/mcu_mve_simd.h), so a deployment
 * made for an MVE core also runs, slowly, on the host. Conv, depthwise conv, pooling, Add and Mul
 * honour an out c_stride as their reference kernels do (mcu_runtime.h).
 *
 * Offset folding: where a kernel says "bias'", the caller passes
 *     bias'[o] = wrap32(bias[o] + input_offset * sum_k W[o, k])      (never NULL)
 * and the kernel accumulates sum_k W[o, k] * X[k] over raw int8 inputs; padding taps read
 * the input zero point. Requantization: VQRDMULH + VRSHL with a sign fix-up, TFLite's double
 * rounding bit for bit for every int32 accumulator (src/mve/mcu_mve_internal.h).
 */
#ifndef MCU_RUNTIME_MVE_H
#define MCU_RUNTIME_MVE_H

#include "mcu_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weight rows for conv / fully connected ("quad rows"): the reference rows of K values
 * (conv [O, kH, kW, C] -> K = kH*kW*C; fully connected [N, K]) zero-padded to
 * Kp = ceil16(K); rows 4b..4b+R-1 (R = 4, or O % 4 for the last block) start at byte 4b*Kp
 * and are interleaved 16 bytes at a time: chunk g of row 4b + r at 4b*Kp + (g*R + r)*16.
 * O * Kp bytes. */

/* Conv, groups = 1 (in c == w c), any kernel size, stride, dilation and padding.
 * w: quad rows; bias: for a pointwise conv (1x1, stride 1, unpadded, in h, w == out h, w) bias',
 * for any other conv ceil(O/4) blocks of 12 int32: per block of four channels the four bias',
 * the four multipliers, the four shifts (channels >= O: 0, 0, -1); quant->multiplier and
 * quant->shift are still passed (read to choose the path). Scratch: two columns of Kp bytes (none for a pointwise conv with
 * C % 16 == 0; a pointwise conv reads its rows in place, the columns only for its last pair).
 * aligned_pointwise: 1 for a 1x1, stride 1, unpadded conv with C % 16 == 0, else 0. */
#define MCU_CONV2D_S8_MVE_SCRATCH_BYTES(depth, aligned_pointwise) ((1 - (aligned_pointwise)) * 2 * MCU_ROUND_UP(depth, 16))
int32_t mcu_conv2d_s8_mve_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                       const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_conv2d_s8_mve(const mcu_context *ctx, const mcu_conv_params *params,
                             const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                             const mcu_dims *out_dims, int8_t *out);
/* The same without the argument checks (the code generator makes them; the scratch of
 * MCU_CONV2D_S8_MVE_SCRATCH_BYTES must be in ctx when that is > 0). */
mcu_status mcu_conv2d_s8_mve_prechecked(const mcu_context *ctx, const mcu_conv_params *params,
                                        const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                        const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                        const mcu_dims *out_dims, int8_t *out);

/* Depthwise conv, depth multiplier 1 (w_dims = {C, kH, kW, 1}, out c = in c), any kernel
 * size, stride, dilation and padding. G = ceil(C/8) groups of 8 channels. w: "group major",
 * [G][kH*kW][8]: tap t of channel c at byte ((c/8)*kH*kW + t)*8 + c%8 (channels >= C: 0);
 * bias: not bias' but G blocks of 24 int32, per group bias', multipliers and shifts, each as
 * the group's channels 0, 2, 4, 6 then 1, 3, 5, 7 (channels >= C: 0, 0, -1); quant->multiplier
 * is not read. Scratch: optional; with at least the band, G * kH * ((W_out - 1) * stride_w +
 * kW) * 8 bytes (dilation 1, kH <= 16; scratch_size returns it, else 0), the band path runs,
 * else (a smaller context too) the pixel path. */
#define MCU_DEPTHWISE_MVE_BAND_WIDTH(out_w, stride_w, kernel_w) (((out_w) - 1) * (stride_w) + (kernel_w))
#define MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES(out_w, stride_w, kernel_h, kernel_w, in_c) \
    ((kernel_h) * MCU_DEPTHWISE_MVE_BAND_WIDTH(out_w, stride_w, kernel_w) * 8 * (((in_c) + 7) / 8))   /* the band */
int32_t mcu_depthwise_conv2d_s8_mve_scratch_size(const mcu_depthwise_params *params, const mcu_dims *in_dims,
                                                 const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_depthwise_conv2d_s8_mve(const mcu_context *ctx, const mcu_depthwise_params *params,
                                       const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                       const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                       const int32_t *bias, const mcu_dims *out_dims, int8_t *out);

/* Fully connected, weights_offset 0. w: quad rows of the [N, K] weights; bias: bias'.
 * Scratch: two rows of Kp bytes when K % 16 != 0, else none. */
#define MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES(depth) (((depth) % 16 != 0) * 2 * MCU_ROUND_UP(depth, 16))
int32_t mcu_fully_connected_s8_mve_scratch_size(const mcu_fc_params *params, const mcu_dims *in_dims,
                                                const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_fully_connected_s8_mve(const mcu_context *ctx, const mcu_fc_params *params,
                                      const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                      const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                      const mcu_dims *out_dims, int8_t *out);
/* The same without the argument checks (the code generator makes them; the scratch of
 * MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES(K) must be in ctx when that is > 0). */
mcu_status mcu_fully_connected_s8_mve_prechecked(const mcu_context *ctx, const mcu_fc_params *params,
                                                 const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                                 const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                                 const int32_t *bias, const mcu_dims *out_dims, int8_t *out);

/* Add / Mul of two tensors of the output's shape (no broadcasting), any parameters the
 * reference accepts. Out may be in1 or in2. */
mcu_status mcu_add_s8_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_mul_s8_mve(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);

/* Average pooling over windows of at most 256 elements; max pooling, any window. */
mcu_status mcu_avg_pool_s8_mve(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_max_pool_s8_mve(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MCU_RUNTIME_MVE_H */
