/*
 * mcu_runtime.h - the portable C99 integer kernel library of mcudeploy.
 *
 * Every kernel computes exactly what the Python integer reference computes
 * (src/mcudeploy/reference/int_kernels/, src/mcudeploy/arithmetic/fixed_point.py), which in
 * turn is TensorFlow Lite Micro's reference kernels, byte for byte. The Python `prepare`
 * step of each op produces the numbers that go into the quant / params structs below.
 *
 * One API shape for every kernel:
 *
 *     mcu_status mcu_<op>_<type>(const mcu_context *ctx, const mcu_<op>_params *params,
 *                                const mcu_<op>_quant *quant,
 *                                const mcu_dims *in_dims, const <T> *in, ...,
 *                                const mcu_dims *out_dims, <T> *out);
 *     int32_t mcu_<op>_<type>_scratch_size(...);      (only ops that need scratch)
 *
 * (ops without parameters or quantization simply omit that argument).
 * <type>: s8 = int8 activations; s16 = int16 activations with int8 weights ("16x8",
 * zero points 0, int64 bias and accumulator where TFLite uses them).
 *
 * Layouts: activations NHWC (mcu_dims n, h, w, c; a rank-2 [rows, depth] tensor is
 * n = rows, h = w = 1, c = depth). Weights as the mcudeploy IR keeps them:
 *   conv            [O, kH, kW, C/groups]      int8, symmetric (zero point 0)
 *   depthwise conv  [C*M, kH, kW, 1]           int8, output channel c*M + m reads input c
 *   transpose conv  [O, kH, kW, C/groups]      int8
 *   fully connected [N, K]                     int8 (w_dims n = N, c = K)
 * Biases: int32 [O] for s8, int64 [O] for s16; NULL means no bias.
 *
 * Value ranges: real = multiplier * 2^(shift - 31); multipliers are the int32 values
 * `prepare` emits (usually Q0.31 in [2^30, 2^31); Mean's are divided by the element
 * count; Logistic / Tanh's may wrap to INT32_MIN), shifts in [-31, 30] (positive = left
 * shift; the 16x8 int64 form needs [-31, 7]); activation_min <= activation_max within the
 * output type's range (checked); zero points within the activation type's range. Kernels check pointers and
 * shapes (MCU_ERR_ARG) and scratch size (MCU_ERR_SCRATCH), never allocate, and use only
 * <stdint.h>, <stddef.h>, <string.h>. Outputs must not alias inputs unless stated.
 * Compile with -ffp-contract=off (the float kernels: resize nearest, quantize) so that no
 * fused multiply-add changes float32 results.
 */
#ifndef MCU_RUNTIME_H
#define MCU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MCU_OK = 0,
    MCU_ERR_ARG = 1,     /* NULL pointer, inconsistent shapes or out-of-range parameter */
    MCU_ERR_SCRATCH = 2  /* ctx->buffer missing or smaller than _scratch_size(...) */
} mcu_status;

/* Scratch memory the caller provides (may be {NULL, 0} for kernels without scratch). */
typedef struct {
    void *buffer;
    int32_t size; /* bytes */
} mcu_context;

/* c_stride: elements from one pixel to the next (0 = c: dense). A positional initialiser
 * {n, h, w, c} leaves it 0, so every dims written before it existed still means dense.
 * Only a kernel's OUTPUT may be strided (c_stride > c), and only for the kernels that say
 * so below ("out c_stride"): they write pixel p, channel k at element p * c_stride + k of
 * `out` and leave the elements between (k >= c) untouched - how a producer writes its
 * channel slice of an NHWC channel concatenation in place (out = the slice's first
 * element). Every other kernel, and every input, requires c_stride 0 or c (MCU_ERR_ARG). */
typedef struct {
    int32_t n, h, w, c;
    int32_t c_stride;
} mcu_dims;

/* Fused activation clamp in the output's quantized domain. */
typedef struct {
    int32_t min, max;
} mcu_activation;

/* ---- convolution family ------------------------------------------------------------ */
typedef struct {
    int32_t stride_h, stride_w;     /* >= 1 */
    int32_t pad_top, pad_left;      /* >= 0; bottom / right follow from out_dims */
    int32_t dilation_h, dilation_w; /* >= 1 */
    mcu_activation activation;
} mcu_conv_params;

typedef struct {
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t dilation_h, dilation_w;
    int32_t depth_multiplier;       /* M = out_c / in_c */
    mcu_activation activation;
} mcu_depthwise_params;

/* Per-output-channel requantization: Y = clamp(mbqm(acc, multiplier[o], shift[o]) +
 * output_offset). input_offset = -input_zero_point (0 for s16). */
typedef struct {
    int32_t input_offset;
    int32_t output_offset;
    const int32_t *multiplier; /* [out channels] */
    const int32_t *shift;      /* [out channels] */
} mcu_channel_quant;

/* Conv with groups = in_dims.c / w_dims.c (w_dims = {O, kH, kW, C/groups}). Out c_stride. */
mcu_status mcu_conv2d_s8(const mcu_context *ctx, const mcu_conv_params *params,
                         const mcu_channel_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                         const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                         const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_conv2d_s16(const mcu_context *ctx, const mcu_conv_params *params,
                          const mcu_channel_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                          const mcu_dims *w_dims, const int8_t *w, const int64_t *bias,
                          const mcu_dims *out_dims, int16_t *out);

/* w_dims = {C*M, kH, kW, 1}. Out c_stride. */
mcu_status mcu_depthwise_conv2d_s8(const mcu_context *ctx, const mcu_depthwise_params *params,
                                   const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                   const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int32_t *bias, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_depthwise_conv2d_s16(const mcu_context *ctx, const mcu_depthwise_params *params,
                                    const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                    const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                    const int64_t *bias, const mcu_dims *out_dims, int16_t *out);

/* Scratch bytes: one formula each, a macro the _scratch_size functions return and mcudeploy's
 * planner evaluates from the same text (tools/make_abi_structs.py copies every function-like
 * MCU_* macro of the mcu_runtime*.h headers into src/mcudeploy/kernels/scratch_formulas.py).
 * So that C and Python read them alike, they use only integers, parameters, + - * / % (on
 * non-negative values), comparisons (0 or 1) and these macros. */
#define MCU_ROUND_UP(value, step) (((value) + (step) - 1) / (step) * (step))
#define MCU_MAX(a, b) ((a) * ((a) >= (b)) + (b) * ((a) < (b)))
#define MCU_TRANSPOSE_CONV2D_SCRATCH_BYTES(out_h, out_w, out_c, accumulator_bytes) \
    ((out_h) * (out_w) * (out_c) * (accumulator_bytes))

/* Transpose conv (TFLite TRANSPOSE_CONV): out[y*sh + i*dh - pad_top, x*sw + j*dw - pad_left]
 * += (X[y, x] + input_offset) * W[o, i, j, c]; then bias and requantization. Scratch: one
 * accumulator per output element of one batch (int32 for s8, int64 for s16). */
int32_t mcu_transpose_conv2d_s8_scratch_size(const mcu_dims *out_dims);
int32_t mcu_transpose_conv2d_s16_scratch_size(const mcu_dims *out_dims);
mcu_status mcu_transpose_conv2d_s8(const mcu_context *ctx, const mcu_conv_params *params,
                                   const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                   const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int32_t *bias, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_transpose_conv2d_s16(const mcu_context *ctx, const mcu_conv_params *params,
                                    const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                    const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                    const int64_t *bias, const mcu_dims *out_dims, int16_t *out);

/* Conv over a slice of the input channels, accumulated in int32 (the input-channel split of
 * one Conv, conv_accumulate.c): for the channels [channel_begin, channel_begin + w_dims.c) of
 * the whole input in_dims (read in place; the pixel stride stays in_dims.c),
 *   acc_out[n, y, x, o] = wrap32(bias[o] + acc_in[n, y, x, o] + sum_{i, j, c} W[o, i, j, c] *
 *                         (X[n, y*sh + i*dh - pad_top, x*sw + j*dw - pad_left, channel_begin + c]
 *                          + input_offset))
 * (taps outside the input are skipped). bias [O] and acc_in [out_dims] may each be NULL (0);
 * acc_out may be acc_in (in place: each element is read before it is written, and by no
 * other output element). wrap32 is two's complement addition, as the unsplit int32
 * accumulator of mcu_conv2d_s8. w_dims = {O, kH, kW, C_g}, out_dims.c = O. */
typedef struct {
    int32_t stride_h, stride_w;     /* >= 1 */
    int32_t pad_top, pad_left;      /* >= 0 */
    int32_t dilation_h, dilation_w; /* >= 1 */
    int32_t channel_begin;          /* >= 0, channel_begin + w_dims.c <= in_dims.c */
} mcu_conv_accumulate_params;

typedef struct {
    int32_t input_offset; /* -input_zero_point */
} mcu_accumulate_quant;

mcu_status mcu_conv_accumulate_s8_s32(const mcu_context *ctx, const mcu_conv_accumulate_params *params,
                                      const mcu_accumulate_quant *quant, const mcu_dims *in_dims,
                                      const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                      const int32_t *bias, const int32_t *acc_in, const mcu_dims *out_dims,
                                      int32_t *acc_out);

/* Requantization of an int32 conv accumulator (the last step of an input-channel split):
 * Y[..., o] = clamp(mbqm(A[..., o], multiplier[o], shift[o]) + output_offset), o = the NHWC
 * channel (in_dims.c output channels; quant->input_offset is unused, 0). in_dims == out_dims.
 * out may start at in (in place: element i is read, then byte i written, and i <= 4 i). */
typedef struct {
    mcu_activation activation;
} mcu_accumulator_params;

mcu_status mcu_requantize_accumulator_s32_s8(const mcu_context *ctx, const mcu_accumulator_params *params,
                                             const mcu_channel_quant *quant, const mcu_dims *in_dims,
                                             const int32_t *in, const mcu_dims *out_dims, int8_t *out);

/* ---- fully connected: acc[r, n] = bias[n] + sum_k (W[n,k] + weights_offset) * (X[r,k] +
 * input_offset); rows = in n*h*w, depth K = in c = w c, units N = w n = out c. ---------- */
typedef struct {
    mcu_activation activation;
} mcu_fc_params;

typedef struct {
    int32_t input_offset;
    int32_t weights_offset;    /* -weights zero point (per-tensor weights only, else 0) */
    int32_t output_offset;
    const int32_t *multiplier; /* [N] (the same value repeated for per-tensor weights) */
    const int32_t *shift;      /* [N] */
} mcu_fc_quant;

mcu_status mcu_fully_connected_s8(const mcu_context *ctx, const mcu_fc_params *params,
                                  const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                  const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                  const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_fully_connected_s16(const mcu_context *ctx, const mcu_fc_params *params,
                                   const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                   const int16_t *in, const mcu_dims *w_dims, const int8_t *w,
                                   const int64_t *bias, const mcu_dims *out_dims, int16_t *out);

/* ---- elementwise add / sub / mul with broadcasting (a dimension of an input is either
 * the output's or 1) -------------------------------------------------------------------- */
typedef struct {
    mcu_activation activation;
} mcu_elementwise_params;

/* a = mbqm((A + input1_offset) << left_shift, input1_multiplier, input1_shift) (shift <= 0),
 * likewise b; Y = clamp(mbqm(a +/- b, output_multiplier, output_shift) + output_offset).
 * left_shift is 20 for s8 and 15 for s16. */
typedef struct {
    int32_t left_shift;
    int32_t input1_offset, input2_offset, output_offset;
    int32_t input1_multiplier, input1_shift;
    int32_t input2_multiplier, input2_shift;
    int32_t output_multiplier, output_shift;
} mcu_add_quant;

/* Y = clamp(mbqm((A + input1_offset) * (B + input2_offset), multiplier, shift) + output_offset) */
typedef struct {
    int32_t input1_offset, input2_offset, output_offset;
    int32_t output_multiplier, output_shift;
} mcu_mul_quant;

/* Add, Sub, Mul: out c_stride. */
mcu_status mcu_add_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_add_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_sub_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_add_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_sub_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_add_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_mul_s8(const mcu_context *ctx, const mcu_elementwise_params *params,
                      const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int8_t *in1,
                      const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_mul_s16(const mcu_context *ctx, const mcu_elementwise_params *params,
                       const mcu_mul_quant *quant, const mcu_dims *in1_dims, const int16_t *in1,
                       const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);

/* ---- pooling (input and output share scale and zero point) --------------------------- */
typedef struct {
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t kernel_h, kernel_w;
    mcu_activation activation;
} mcu_pool_params;

/* Average over the in-bounds elements of each window (padding never counts), rounded half
 * away from zero; max pooling takes the in-bounds maximum. Both then clamp. Out c_stride. */
mcu_status mcu_avg_pool_s8(const mcu_context *ctx, const mcu_pool_params *params,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_avg_pool_s16(const mcu_context *ctx, const mcu_pool_params *params,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_max_pool_s8(const mcu_context *ctx, const mcu_pool_params *params,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_max_pool_s16(const mcu_context *ctx, const mcu_pool_params *params,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out);

/* ---- mean over any of the axes n, h, w, c (TFLite MEAN) --------------------------------
 * out_dims has 1 in every reduced axis; multiplier / shift are the prepared ones
 * (already divided by the element count): Y = clamp(mbqm(wrap32(sum X - input_zero_point
 * * count), multiplier, shift) + output_zero_point, type range). */
#define MCU_AXIS_N 1
#define MCU_AXIS_H 2
#define MCU_AXIS_W 4
#define MCU_AXIS_C 8
typedef struct {
    int32_t axes; /* bit mask of MCU_AXIS_* */
} mcu_mean_params;

typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;
} mcu_mean_quant;

mcu_status mcu_mean_s8(const mcu_context *ctx, const mcu_mean_params *params, const mcu_mean_quant *quant,
                       const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_mean_s16(const mcu_context *ctx, const mcu_mean_params *params, const mcu_mean_quant *quant,
                        const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out);

/* ---- softmax over c (the last axis), int8 input; output int8 (zero point -128, scale
 * 1/256) or int16 (zero point -32768, scale 1/65536) ----------------------------------- */
typedef struct {
    int32_t input_multiplier;  /* preprocess_softmax_scaling(beta, s_in, 5) */
    int32_t input_left_shift;
    int32_t diff_min;          /* -calculate_input_radius(5, input_left_shift) */
} mcu_softmax_quant;

mcu_status mcu_softmax_s8(const mcu_context *ctx, const mcu_softmax_quant *quant,
                          const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_softmax_s8_s16(const mcu_context *ctx, const mcu_softmax_quant *quant,
                              const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims,
                              int16_t *out);

/* ---- logistic / tanh, int8 (gemmlowp fixed point on Q4.27) -----------------------------
 * Logistic output: zero point -128, scale 1/256; tanh output: zero point 0, scale 1/128. */
typedef struct {
    int32_t input_zero_point;
    int32_t input_multiplier;   /* frexp_multiplier(s_in * 2^27) (may wrap to INT32_MIN) */
    int32_t input_left_shift;
    int32_t input_range_radius; /* calculate_input_radius(4, input_left_shift) */
} mcu_smooth_step_quant;

mcu_status mcu_logistic_s8(const mcu_context *ctx, const mcu_smooth_step_quant *quant,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_tanh_s8(const mcu_context *ctx, const mcu_smooth_step_quant *quant,
                       const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);

/* ---- logistic / tanh, int16 (TFLM's 256-entry sigmoid table, interpolated) ------------
 * Input and output zero points 0, output scale 2^-15. The input is rescaled to
 * (X * input_multiplier + round) >> input_left_shift, TFLM's table scale 1 / (3 * 2^12). */
typedef struct {
    int32_t input_multiplier;   /* 0..32767 (0..65535 when the shift is 0): 32768 * m plus
                                   the rounding fits int32; 3 << (12 + log2 s_in) for 2^-12 (2^-11) */
    int32_t input_left_shift;   /* 0..31, a right shift with rounding (TFLM's name) */
} mcu_smooth_step_s16_quant;

mcu_status mcu_logistic_s16(const mcu_context *ctx, const mcu_smooth_step_s16_quant *quant,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                            int16_t *out);
mcu_status mcu_tanh_s16(const mcu_context *ctx, const mcu_smooth_step_s16_quant *quant,
                        const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out);

/* ---- hard swish, int8 (TFLite reference_ops::HardSwish, int16 arithmetic) ------------- */
typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t output_multiplier_fixedpoint_int16;   /* Q0.15 */
    int32_t output_multiplier_exponent;           /* <= 0 */
    int32_t reluish_multiplier_fixedpoint_int16;  /* Q0.15 */
    int32_t reluish_multiplier_exponent;
} mcu_hard_swish_quant;

mcu_status mcu_hard_swish_s8(const mcu_context *ctx, const mcu_hard_swish_quant *quant,
                             const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);

/* ---- leaky relu: Y = clamp(zp_out + mbqm(X - zp_in, d >= 0 ? identity : alpha)) -------- */
typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t alpha_multiplier, alpha_shift;
    int32_t identity_multiplier, identity_shift;
} mcu_leaky_relu_quant;

mcu_status mcu_leaky_relu_s8(const mcu_context *ctx, const mcu_leaky_relu_quant *quant,
                             const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_leaky_relu_s16(const mcu_context *ctx, const mcu_leaky_relu_quant *quant,
                              const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                              int16_t *out);

/* ---- requantize / quantize / dequantize ------------------------------------------------ */
/* Y = clamp(mbqm(wrap32(X - input_zero_point), multiplier, shift) + output_zero_point). */
typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift;
} mcu_requantize_quant;

mcu_status mcu_requantize_s8_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const int8_t *in, int8_t *out);
mcu_status mcu_requantize_s8_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, int16_t *out);
mcu_status mcu_requantize_s16_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int16_t *in, int8_t *out);
mcu_status mcu_requantize_s16_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, int16_t *out);
mcu_status mcu_requantize_s32_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int32_t *in, int8_t *out);
mcu_status mcu_requantize_s32_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int32_t *in, int16_t *out);
/* int -> int32 (TFLite int16 models requantize through int32 before some ops). */
mcu_status mcu_requantize_s8_s32(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, int32_t *out);
mcu_status mcu_requantize_s16_s32(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, int32_t *out);
/* uint8 at the model's edges: a uint8 input requantized to int8 (TFLite QUANTIZE, what the
 * converter writes for inference_input_type=uint8: same scale, zero point + 128), an int8
 * result requantized to a uint8 output, uint8 -> uint8. */
mcu_status mcu_requantize_u8_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const uint8_t *in, int8_t *out);
mcu_status mcu_requantize_s8_u8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const int8_t *in, uint8_t *out);
mcu_status mcu_requantize_u8_u8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const uint8_t *in, uint8_t *out);

/* Per-tensor float <-> int: quantize Y = clamp(round(X / scale) + zero_point) in float32,
 * halves rounded away from zero (TFLite QUANTIZE, round_half_even = 0) or to even (ONNX
 * QuantizeLinear, round_half_even = 1); dequantize Y = scale * (X - zero_point) in float32
 * (one rounding, equal to TFLite's double product rounded to float; round_half_even unused). */
typedef struct {
    float scale;
    int32_t zero_point;
    int32_t round_half_even;
} mcu_affine_quant;

mcu_status mcu_quantize_f32_s8(const mcu_context *ctx, const mcu_affine_quant *quant,
                               const mcu_dims *dims, const float *in, int8_t *out);
mcu_status mcu_quantize_f32_s16(const mcu_context *ctx, const mcu_affine_quant *quant,
                                const mcu_dims *dims, const float *in, int16_t *out);
mcu_status mcu_quantize_f32_u8(const mcu_context *ctx, const mcu_affine_quant *quant,
                               const mcu_dims *dims, const float *in, uint8_t *out);
mcu_status mcu_dequantize_s8_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, float *out);
mcu_status mcu_dequantize_s16_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, float *out);
mcu_status mcu_dequantize_u8_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                 const mcu_dims *dims, const uint8_t *in, float *out);

/* ---- data movement (raw integers move unchanged; element_size in bytes: 1, 2 or 4) ----- */
/* Reshape: a copy (memmove, so in == out is allowed and is a no-op). */
mcu_status mcu_reshape(const mcu_context *ctx, const mcu_dims *dims, int32_t element_size,
                       const void *in, void *out);

/* Concatenate `count` inputs along axis 0..3 (n, h, w, c). quant: NULL to copy every
 * input, else one entry per input; an entry with requantize == 0 is copied, others are
 * requantized (s8 / s16 variants only). */
typedef struct {
    int32_t axis;  /* 0 = n, 1 = h, 2 = w, 3 = c */
    int32_t count; /* number of inputs, >= 1 */
} mcu_concat_params;

typedef struct {
    int32_t requantize;
    mcu_requantize_quant quant;
} mcu_concat_quant;

mcu_status mcu_concat_s8(const mcu_context *ctx, const mcu_concat_params *params,
                         const mcu_concat_quant *quant, const mcu_dims *in_dims,
                         const int8_t *const *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_concat_s16(const mcu_context *ctx, const mcu_concat_params *params,
                          const mcu_concat_quant *quant, const mcu_dims *in_dims,
                          const int16_t *const *in, const mcu_dims *out_dims, int16_t *out);

/* Pad: per axis (n, h, w, c) `before` elements (negative crops). Output index o reads input
 * index o - before; outside the input: MCU_PAD_CONSTANT writes pad_value, MCU_PAD_REFLECT
 * mirrors without repeating the edge, MCU_PAD_EDGE repeats the edge. */
#define MCU_PAD_CONSTANT 0
#define MCU_PAD_REFLECT 1
#define MCU_PAD_EDGE 2
typedef struct {
    int32_t before[4];
    int32_t mode;
    int32_t pad_value; /* quantized, within the element type's range */
} mcu_pad_params;

mcu_status mcu_pad_s8(const mcu_context *ctx, const mcu_pad_params *params,
                      const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_pad_s16(const mcu_context *ctx, const mcu_pad_params *params,
                       const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out);

/* Transpose: output axis k is input axis perm[k] (a permutation of 0..3). */
typedef struct {
    int32_t perm[4];
} mcu_transpose_params;

mcu_status mcu_transpose(const mcu_context *ctx, const mcu_transpose_params *params,
                         int32_t element_size, const mcu_dims *in_dims, const void *in,
                         const mcu_dims *out_dims, void *out);

/* Strided slice: out[o] = in[begin + o * stride] on each axis (n, h, w, c); begin must be
 * in range and the last index read inside the input; strides may be negative. out c_stride
 * (the Slice writes its channel slice of a concatenation in place). */
typedef struct {
    int32_t begin[4];
    int32_t stride[4];
} mcu_strided_slice_params;

mcu_status mcu_strided_slice(const mcu_context *ctx, const mcu_strided_slice_params *params,
                             int32_t element_size, const mcu_dims *in_dims, const void *in,
                             const mcu_dims *out_dims, void *out);

/* ---- resize of h and w (TFLite RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR) -------------- */
typedef struct {
    int32_t align_corners;      /* 0 or 1 */
    int32_t half_pixel_centers; /* 0 or 1 */
} mcu_resize_params;

/* Nearest: out c_stride (bilinear: dense output only). */
mcu_status mcu_resize_nearest(const mcu_context *ctx, const mcu_resize_params *params,
                              int32_t element_size, const mcu_dims *in_dims, const void *in,
                              const mcu_dims *out_dims, void *out);
mcu_status mcu_resize_bilinear_s8(const mcu_context *ctx, const mcu_resize_params *params,
                                  const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims,
                                  int8_t *out);
mcu_status mcu_resize_bilinear_s16(const mcu_context *ctx, const mcu_resize_params *params,
                                   const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                                   int16_t *out);

/* ---- maximum / minimum with 4-D broadcasting (TFLite MAXIMUM / MINIMUM): the raw integers
 * are compared, so both inputs and the output share scale and zero point ----------------- */
mcu_status mcu_maximum_s8(const mcu_context *ctx, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_maximum_s16(const mcu_context *ctx, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_minimum_s8(const mcu_context *ctx, const mcu_dims *in1_dims, const int8_t *in1,
                          const mcu_dims *in2_dims, const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_minimum_s16(const mcu_context *ctx, const mcu_dims *in1_dims, const int16_t *in1,
                           const mcu_dims *in2_dims, const int16_t *in2, const mcu_dims *out_dims, int16_t *out);

/* ---- squared difference with 4-D broadcasting (TFLite SQUARED_DIFFERENCE) --------------
 * The fields of mcu_add_quant: a = mbqm((A + input1_offset) << left_shift, input1_multiplier,
 * input1_shift) (shift <= 0), b likewise, Y = clamp(mbqm(wrap32((a - b)^2),
 * output_multiplier, output_shift) + output_offset, type range); left_shift is 7 for s8 and
 * 0 for s16 (zero points 0); output_shift may be positive. */
typedef mcu_add_quant mcu_squared_difference_quant;

mcu_status mcu_squared_difference_s8(const mcu_context *ctx, const mcu_squared_difference_quant *quant,
                                     const mcu_dims *in1_dims, const int8_t *in1, const mcu_dims *in2_dims,
                                     const int8_t *in2, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_squared_difference_s16(const mcu_context *ctx, const mcu_squared_difference_quant *quant,
                                      const mcu_dims *in1_dims, const int16_t *in1, const mcu_dims *in2_dims,
                                      const int16_t *in2, const mcu_dims *out_dims, int16_t *out);

/* ---- reduce max / min over any of the axes n, h, w, c (TFLite REDUCE_MAX / REDUCE_MIN):
 * out_dims has 1 in every reduced axis; raw integers, input and output share scale and
 * zero point. (TFLite SUM is mcu_mean_* with the undivided multiplier.) ------------------- */
typedef struct {
    int32_t axes; /* bit mask of MCU_AXIS_* */
} mcu_reduce_params;

mcu_status mcu_reduce_max_s8(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                             const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_reduce_max_s16(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                              const int16_t *in, const mcu_dims *out_dims, int16_t *out);
mcu_status mcu_reduce_min_s8(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                             const int8_t *in, const mcu_dims *out_dims, int8_t *out);
mcu_status mcu_reduce_min_s16(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                              const int16_t *in, const mcu_dims *out_dims, int16_t *out);

/* ---- arg max / min along one axis (TFLite ARG_MAX / ARG_MIN): int32 indices, out_dims =
 * in_dims with the axis set to 1; ties give the first index (the last with
 * select_last_index) --------------------------------------------------------------------- */
typedef struct {
    int32_t axis;              /* 0 = n, 1 = h, 2 = w, 3 = c */
    int32_t select_last_index; /* 0 or 1 */
} mcu_arg_params;

mcu_status mcu_arg_max_s8(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                          const int8_t *in, const mcu_dims *out_dims, int32_t *out);
mcu_status mcu_arg_max_s16(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                           const int16_t *in, const mcu_dims *out_dims, int32_t *out);
mcu_status mcu_arg_min_s8(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                          const int8_t *in, const mcu_dims *out_dims, int32_t *out);
mcu_status mcu_arg_min_s16(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                           const int16_t *in, const mcu_dims *out_dims, int32_t *out);

/* ---- gather / tile (raw elements copied; element_size 1, 2 or 4) ------------------------
 * Gather along axis: outer = prod(in dims before axis), S = in dims[axis], inner =
 * prod(after); out[o, j, i] = in[o, indices[j], i] for j < index_count (negative indices
 * count from S; outside [-S, S) is MCU_ERR_ARG). Tile: out dims = in dims * repeats,
 * out[n, h, w, c] = in[n % N, h % H, w % W, c % C]. */
typedef struct {
    int32_t axis; /* 0 = n, 1 = h, 2 = w, 3 = c */
} mcu_gather_params;

typedef struct {
    int32_t repeats[4]; /* >= 1, per axis n, h, w, c */
} mcu_tile_params;

mcu_status mcu_gather(const mcu_context *ctx, const mcu_gather_params *params, int32_t element_size,
                      const mcu_dims *in_dims, const void *in, int32_t index_count, const int32_t *indices,
                      void *out);
mcu_status mcu_tile(const mcu_context *ctx, const mcu_tile_params *params, int32_t element_size,
                    const mcu_dims *in_dims, const void *in, const mcu_dims *out_dims, void *out);

/* ---- abs / rsqrt (TFLite ABS int8 / int16, RSQRT int8) ----------------------------------
 * Abs: v = |X - input_zero_point|, Y = clamp(v + output_zero_point) or, with needs_rescale,
 * clamp(mbqm(v, multiplier, shift) + output_zero_point) (s16: zero points 0).
 * Rsqrt: v = X - input_zero_point; v == 0 gives 127, v < 0 is MCU_ERR_ARG (TFLM refuses
 * it); else Y = clamp(mbqm(mbqm(1, r, k + 20), multiplier, shift - 20) + output_zero_point)
 * with 1 / sqrt(v) = r * 2^(k - 31) (TFLite GetInvSqrtQuantizedMultiplierExp). */
typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t needs_rescale; /* input scale != output scale */
    int32_t multiplier, shift;
} mcu_abs_quant;

typedef struct {
    int32_t input_zero_point, output_zero_point;
    int32_t multiplier, shift; /* quantize_multiplier(1 / (sqrtf(s_in) * s_out)) */
} mcu_rsqrt_quant;

mcu_status mcu_abs_s8(const mcu_context *ctx, const mcu_abs_quant *quant, const mcu_dims *dims, const int8_t *in,
                      int8_t *out);
mcu_status mcu_abs_s16(const mcu_context *ctx, const mcu_abs_quant *quant, const mcu_dims *dims, const int16_t *in,
                       int16_t *out);
mcu_status mcu_rsqrt_s8(const mcu_context *ctx, const mcu_rsqrt_quant *quant, const mcu_dims *dims, const int8_t *in,
                        int8_t *out);

/* ---- log softmax over c (the last axis), int8 in and out (TFLite LOG_SOFTMAX: output scale
 * 16/256, zero point 127); gemmlowp exp and log as TFLite's LogSoftmaxQuantized ----------- */
typedef struct {
    int32_t input_multiplier;        /* preprocess_softmax_scaling(1, s_in, 5) */
    int32_t input_left_shift;        /* 0..31 */
    int32_t reverse_scaling_divisor; /* qm_smaller_than_one(2^(31 - left_shift) / multiplier) */
    int32_t reverse_scaling_shift;   /* <= 0 */
    int32_t diff_min;                /* -calculate_input_radius(5, input_left_shift) */
} mcu_log_softmax_quant;

mcu_status mcu_log_softmax_s8(const mcu_context *ctx, const mcu_log_softmax_quant *quant, const mcu_dims *in_dims,
                              const int8_t *in, const mcu_dims *out_dims, int8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MCU_RUNTIME_H */
