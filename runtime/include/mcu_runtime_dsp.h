/*
 * mcu_runtime_dsp.h - kernel variants for Cortex-M cores with the DSP extension
 * (Armv7E-M: Cortex-M4, M7; Armv8-M mainline with DSP: Cortex-M33, M35P, M55, M85).
 *
 * Same API shape as mcu_runtime.h (name + "_dsp"), same results bit for bit, different
 * weight layouts, prepared offline by mcudeploy (src/mcudeploy/kernels/dsp.py) and
 * documented per kernel below. Built without the DSP extension (the host, M0+ / M3) the
 * same sources compile to portable C with the same results (src/dsp/mcu_dsp_simd.h), so a
 * deployment made for a DSP core also runs, slowly, on the host. Conv, depthwise conv and
 * pooling, Add and Mul honour an out c_stride as their reference kernels do (mcu_runtime.h).
 *
 * Requantization: SMMULR where a channel's accumulators provably stay below 2^30 after its
 * left shift (|bias| + K * 128 * 255, decided once per channel), TFLite's 64-bit form
 * elsewhere: bit-exact for every input (src/dsp/mcu_dsp_internal.h).
 */
#ifndef MCU_RUNTIME_DSP_H
#define MCU_RUNTIME_DSP_H

#include "mcu_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weight rows for conv / fully connected ("paired rows"): the reference rows of K values
 * (conv [O, kH, kW, C] -> K = kH*kW*C; fully connected [N, K]) zero-padded to Kp = ceil4(K),
 * then rows 2q and 2q+1 interleaved four bytes at a time: bytes 8g..8g+3 of the pair = row
 * 2q's k = 4g..4g+3, bytes 8g+4..8g+7 = row 2q+1's; an odd last row stays plain. The array
 * is O * Kp bytes, 4-byte aligned. */

/* Conv, groups = 1 (in c == w c), any kernel size, stride, dilation and padding.
 * Blocks of B output pixels: when K = kH * kW * C >= 64, B = 4 ("quad") or else 3
 * ("triple"), whichever is the largest whose scratch, B q15 columns (2 * B * Kp bytes), stays
 * within the optimised variants' budget max(1 KiB, (input bytes + output bytes) / 2)
 * (src/mcudeploy/kernels/prepared.py), each block x one output channel: w = the rows
 * zero-padded to Kp, plain (row o at byte o * Kp). Otherwise B = 2 x two output channels:
 * w = paired rows. Scratch 2 * B * Kp bytes, plus Kp when C % 4 != 0; 4-byte aligned. Bias
 * as the reference's. in_bytes / out_bytes = N*H*W*C of the input / output. */
#define MCU_CONV2D_S8_DSP_EXTRA_BYTES(depth, in_c) (((in_c) % 4 != 0) * MCU_ROUND_UP(depth, 4))
#define MCU_CONV2D_S8_DSP_FITS(pixels, depth, in_c, in_bytes, out_bytes)                           \
    (2 * (pixels) * MCU_ROUND_UP(depth, 4) + MCU_CONV2D_S8_DSP_EXTRA_BYTES(depth, in_c)            \
     <= MCU_MAX(1024, ((in_bytes) + (out_bytes)) / 2))
#define MCU_CONV2D_S8_DSP_BLOCK(depth, in_c, in_bytes, out_bytes)                                  \
    (2 + ((depth) >= 64) * (MCU_CONV2D_S8_DSP_FITS(3, depth, in_c, in_bytes, out_bytes)            \
                            + MCU_CONV2D_S8_DSP_FITS(4, depth, in_c, in_bytes, out_bytes)))
#define MCU_CONV2D_S8_DSP_SCRATCH_BYTES(depth, in_c, in_bytes, out_bytes)                          \
    (2 * MCU_CONV2D_S8_DSP_BLOCK(depth, in_c, in_bytes, out_bytes) * MCU_ROUND_UP(depth, 4)        \
     + MCU_CONV2D_S8_DSP_EXTRA_BYTES(depth, in_c))
int32_t mcu_conv2d_s8_dsp_scratch_size(const mcu_conv_params *params, const mcu_dims *in_dims,
                                       const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_conv2d_s8_dsp(const mcu_context *ctx, const mcu_conv_params *params,
                             const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                             const mcu_dims *out_dims, int8_t *out);

/* Depthwise conv, depth multiplier 1 (w_dims = {C, kH, kW, 1}, out c = in c), any kernel
 * size, stride, dilation and padding. w: "depthwise groups": for each group of four
 * channels 4g..4g+3, its kH*kW taps in (i, j) order, four bytes each (channel 4g + r at
 * byte r); then the C % 4 tail channels, tap-major (tap t of tail channel r at byte
 * 4*floor(C/4)*kH*kW + t*(C % 4) + r). C * kH * kW bytes. No scratch. */
mcu_status mcu_depthwise_conv2d_s8_dsp(const mcu_context *ctx, const mcu_depthwise_params *params,
                                       const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                       const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                       const int32_t *bias, const mcu_dims *out_dims, int8_t *out);

/* Fully connected, weights_offset 0 (symmetric weights). w: "quad rows" of the [N, K]
 * weights: zero-padded to Kp as above, rows 4q..4q+3 interleaved four bytes at a time (bytes
 * 16g + 4i .. 16g + 4i + 3 of the block = row 4q+i's k = 4g..4g+3), then the N mod 4 last
 * rows as paired rows. N * Kp bytes. No scratch (the _scratch_size function returns 0). */
int32_t mcu_fully_connected_s8_dsp_scratch_size(const mcu_fc_params *params, const mcu_dims *in_dims,
                                                const mcu_dims *w_dims, const mcu_dims *out_dims);
mcu_status mcu_fully_connected_s8_dsp(const mcu_context *ctx, const mcu_fc_params *params,
                                      const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                      const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                      const mcu_dims *out_dims, int8_t *out);
/* The same with the checks done by the caller (mcudeploy's code generator, at generation
 * time), so that a tiny layer does not pay ~100 instructions of checks per call: _prechecked
 * never checks the arguments (MCU_ERR_ARG never); _simple also takes every unit as "simple"
 * (shift <= -1 and |bias| + K * 128 * 255 < 2^30, mcu_dsp_internal.h) without looking. */
mcu_status mcu_fully_connected_s8_dsp_prechecked(const mcu_context *ctx, const mcu_fc_params *params,
                                                 const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                                 const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                                 const int32_t *bias, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_fully_connected_s8_dsp_simple(const mcu_context *ctx, const mcu_fc_params *params,
                                             const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                             const mcu_dims *out_dims, int8_t *out);

/* Add / Mul of two tensors of the output's shape (no broadcasting); Add needs left_shift
 * <= 21, Mul output_shift <= 13 (TFLite's int8 values: 20 and <= 0). Out may be in1 or in2. */
mcu_status mcu_add_s8_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_mul_s8_dsp(const mcu_context *ctx, const mcu_elementwise_params *params,
                          const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);

/* Average / max pooling, any window, stride and padding (as the reference). */
mcu_status mcu_avg_pool_s8_dsp(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_max_pool_s8_dsp(const mcu_context *ctx, const mcu_pool_params *params, const mcu_dims *in_dims,
                               const int8_t *in, const mcu_dims *out_dims, int8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MCU_RUNTIME_DSP_H */
