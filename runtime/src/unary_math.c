/*
 * unary_math.c - Abs (TFLite ABS, int8 / int16) and Rsqrt (RSQRT, int8), TFLM's
 * elementwise.cc.
 *
 *   Abs:   v = |X - zp_in|;  Y = clamp(v + zp_out) or, with needs_rescale,
 *          clamp(mbqm(v, multiplier, shift) + zp_out), type range.
 *   Rsqrt: v = X - zp_in;  v == 0 -> 127;  v < 0 -> MCU_ERR_ARG (TFLM refuses it);
 *          (r, k) = inverse_sqrt(v);  d = mbqm(1, r, k + 20);
 *          Y = clamp(mbqm(d, multiplier, shift - 20) + zp_out, -128, 127).
 * inverse_sqrt is TFLite's GetInvSqrtQuantizedMultiplierExp with kReverseShift: Newton
 * iteration x = 1.5 x - (v/2) x^3 in gemmlowp Q3.28 fixed point (5 steps), times
 * sqrt(2)/2. Spec: reference/int_kernels/unary_math.py.
 */
#include "mcu_internal.h"

#define RSQRT_SHIFT 20
#define HALF_SQRT_2_Q31 1518500250

/* 1 / sqrt(v) = *multiplier * 2^(*shift - 31) for v >= 2 (1 gives INT32_MAX, 0). */
static void inverse_sqrt(int32_t v, int32_t *multiplier, int32_t *shift) {
    if (v <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    int32_t right_shift = 11;
    while (v >= (1 << 29)) {
        v /= 4;
        ++right_shift;
    }
    int32_t pairs = (mcu_count_leading_zeros((uint32_t)v) - 1) / 2 - 1;
    right_shift -= pairs;
    v = mcu_wrap_shift_left(v, 2 * pairs);
    int32_t half_input = mcu_rdbpot(v >> 1, 1), half_three = (1 << 28) + (1 << 27), x = 1 << 28;
    for (int32_t step = 0; step < 5; ++step) {
        int32_t cube = mcu_srmbpot(mcu_srdhm(mcu_srdhm(x, x), x), 6);
        x = mcu_srmbpot(mcu_wrap_sub(mcu_srdhm(half_three, x), mcu_srdhm(half_input, cube)), 3);
    }
    x = mcu_srdhm(x, HALF_SQRT_2_Q31);
    if (right_shift < 0) {
        x = mcu_wrap_shift_left(x, -right_shift);
        right_shift = 0;
    }
    *multiplier = x;
    *shift = -right_shift;
}

static mcu_status abs_core(const mcu_abs_quant *quant, const mcu_dims *dims, const void *in, void *out,
                           mcu_element_type type) {
    if (quant == NULL || !mcu_dims_valid(dims) || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t low = mcu_type_min(type), high = mcu_type_max(type), count = mcu_dims_count(dims);
    for (int32_t i = 0; i < count; ++i) {
        int32_t value = mcu_load(in, i, type) - quant->input_zero_point;
        value = value < 0 ? -value : value;
        if (quant->needs_rescale) {
            value = mcu_mbqm(value, quant->multiplier, quant->shift);
        }
        mcu_store(out, i, type, mcu_clamp_add(value, quant->output_zero_point, low, high));
    }
    return MCU_OK;
}

mcu_status mcu_abs_s8(const mcu_context *ctx, const mcu_abs_quant *quant, const mcu_dims *dims, const int8_t *in,
                      int8_t *out) {
    (void)ctx;
    return abs_core(quant, dims, in, out, MCU_INT8);
}

mcu_status mcu_abs_s16(const mcu_context *ctx, const mcu_abs_quant *quant, const mcu_dims *dims, const int16_t *in,
                       int16_t *out) {
    (void)ctx;
    return abs_core(quant, dims, in, out, MCU_INT16);
}

mcu_status mcu_rsqrt_s8(const mcu_context *ctx, const mcu_rsqrt_quant *quant, const mcu_dims *dims, const int8_t *in,
                        int8_t *out) {
    (void)ctx;
    if (quant == NULL || !mcu_dims_valid(dims) || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(dims);
    for (int32_t i = 0; i < count; ++i) {
        if ((int32_t)in[i] < quant->input_zero_point) {
            return MCU_ERR_ARG;
        }
    }
    for (int32_t i = 0; i < count; ++i) {
        int32_t value = (int32_t)in[i] - quant->input_zero_point, multiplier, shift;
        if (value == 0) {
            out[i] = INT8_MAX;
            continue;
        }
        inverse_sqrt(value, &multiplier, &shift);
        int32_t data = mcu_mbqm(1, multiplier, shift + RSQRT_SHIFT);
        int32_t result = mcu_mbqm(data, quant->multiplier, quant->shift - RSQRT_SHIFT);
        out[i] = (int8_t)mcu_clamp_add(result, quant->output_zero_point, INT8_MIN, INT8_MAX);
    }
    return MCU_OK;
}
