/*
 * quantize.c - conversions at the edges and between integer types (TFLM QUANTIZE /
 * DEQUANTIZE):
 *
 *   requantize (int -> int):  Y = clamp(mbqm(wrap32(X - zp_in), m, s) + zp_out, type range)
 *   quantize (float -> int):  Y = clamp(round_half_away(X / scale) + zp, type range), float32
 *   dequantize (int -> float): Y = scale * (float)(X - zp), float32 (one rounding of the exact
 *                              product, the same as TFLite's double product cast to float)
 * uint8 appears only at the model's edges (a uint8 graph input requantized to int8 by
 * TFLite's QUANTIZE, as the converter writes inference_input_type=uint8, or a uint8
 * output), so these cores take an edge type: one of the signed element types of
 * mcu_internal.h, or EDGE_UINT8.
 * Spec: reference/int_kernels/quant.py.
 */
#include "mcu_internal.h"

#define EDGE_UINT8 0x81 /* not an mcu_element_type: those are signed and sized by value */

static int32_t edge_min(int32_t type) {
    return type == EDGE_UINT8 ? 0 : mcu_type_min((mcu_element_type)type);
}

static int32_t edge_max(int32_t type) {
    return type == EDGE_UINT8 ? UINT8_MAX : mcu_type_max((mcu_element_type)type);
}

static int32_t edge_load(const void *data, int32_t index, int32_t type) {
    return type == EDGE_UINT8 ? (int32_t)((const uint8_t *)data)[index]
                              : mcu_load(data, index, (mcu_element_type)type);
}

/* value is already clamped to the type's range */
static void edge_store(void *data, int32_t index, int32_t type, int32_t value) {
    if (type == EDGE_UINT8) {
        ((uint8_t *)data)[index] = (uint8_t)value;
    } else {
        mcu_store(data, index, (mcu_element_type)type, value);
    }
}

static mcu_status requantize_core(const mcu_requantize_quant *quant, const mcu_dims *dims, const void *in,
                                  int32_t in_type, void *out, int32_t out_type) {
    if (quant == NULL || !mcu_dims_valid(dims) || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(dims), low = edge_min(out_type), high = edge_max(out_type);
    for (int32_t i = 0; i < count; ++i) {
        int32_t difference = mcu_wrap_sub(edge_load(in, i, in_type), quant->input_zero_point);
        int32_t scaled = mcu_mbqm(difference, quant->multiplier, quant->shift);
        edge_store(out, i, out_type, mcu_clamp_add(scaled, quant->output_zero_point, low, high));
    }
    return MCU_OK;
}

mcu_status mcu_requantize_u8_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const uint8_t *in, int8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, EDGE_UINT8, out, MCU_INT8);
}

mcu_status mcu_requantize_s8_u8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const int8_t *in, uint8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT8, out, EDGE_UINT8);
}

mcu_status mcu_requantize_u8_u8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const uint8_t *in, uint8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, EDGE_UINT8, out, EDGE_UINT8);
}

mcu_status mcu_requantize_s8_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                const mcu_dims *dims, const int8_t *in, int8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT8, out, MCU_INT8);
}

mcu_status mcu_requantize_s8_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, int16_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT8, out, MCU_INT16);
}

mcu_status mcu_requantize_s16_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int16_t *in, int8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT16, out, MCU_INT8);
}

mcu_status mcu_requantize_s16_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, int16_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT16, out, MCU_INT16);
}

mcu_status mcu_requantize_s32_s8(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int32_t *in, int8_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT32, out, MCU_INT8);
}

mcu_status mcu_requantize_s32_s16(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int32_t *in, int16_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT32, out, MCU_INT16);
}

mcu_status mcu_requantize_s8_s32(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, int32_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT8, out, MCU_INT32);
}

mcu_status mcu_requantize_s16_s32(const mcu_context *ctx, const mcu_requantize_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, int32_t *out) {
    (void)ctx;
    return requantize_core(quant, dims, in, MCU_INT16, out, MCU_INT32);
}

/* round(value) + zero_point clamped to [low, high], halves away from zero or (half_even)
 * to even; NaN gives zero_point (C's float -> int conversion of NaN is undefined; the
 * Python spec's cast differs). */
static int32_t quantize_value(float value, int32_t zero_point, int32_t low, int32_t high, int32_t half_even) {
    if (!(value == value)) {
        return mcu_clamp(zero_point, low, high);
    }
    if (value >= 2147483647.0f) {
        return mcu_clamp_add(INT32_MAX, zero_point, low, high);
    }
    if (value <= -2147483648.0f) {
        return mcu_clamp_add(INT32_MIN, zero_point, low, high);
    }
    int32_t whole = (int32_t)value; /* truncates toward zero */
    float fraction = value - (float)whole; /* exact: |value| < 2^31, whole has value's ulp */
    int32_t odd = (whole % 2) != 0;
    if (fraction > 0.5f || (fraction == 0.5f && (!half_even || odd))) {
        whole += 1;
    } else if (fraction < -0.5f || (fraction == -0.5f && (!half_even || odd))) {
        whole -= 1;
    }
    return mcu_clamp_add(whole, zero_point, low, high);
}

static mcu_status quantize_core(const mcu_affine_quant *quant, const mcu_dims *dims, const float *in, void *out,
                                int32_t type) {
    if (quant == NULL || !mcu_dims_valid(dims) || in == NULL || out == NULL || !(quant->scale > 0.0f)) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(dims);
    for (int32_t i = 0; i < count; ++i) {
        float scaled = in[i] / quant->scale;
        edge_store(out, i, type, quantize_value(scaled, quant->zero_point, edge_min(type), edge_max(type),
                                                quant->round_half_even));
    }
    return MCU_OK;
}

mcu_status mcu_quantize_f32_u8(const mcu_context *ctx, const mcu_affine_quant *quant,
                               const mcu_dims *dims, const float *in, uint8_t *out) {
    (void)ctx;
    return quantize_core(quant, dims, in, out, EDGE_UINT8);
}

mcu_status mcu_quantize_f32_s8(const mcu_context *ctx, const mcu_affine_quant *quant,
                               const mcu_dims *dims, const float *in, int8_t *out) {
    (void)ctx;
    return quantize_core(quant, dims, in, out, MCU_INT8);
}

mcu_status mcu_quantize_f32_s16(const mcu_context *ctx, const mcu_affine_quant *quant,
                                const mcu_dims *dims, const float *in, int16_t *out) {
    (void)ctx;
    return quantize_core(quant, dims, in, out, MCU_INT16);
}

static mcu_status dequantize_core(const mcu_affine_quant *quant, const mcu_dims *dims, const void *in,
                                  int32_t type, float *out) {
    if (quant == NULL || !mcu_dims_valid(dims) || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t count = mcu_dims_count(dims);
    for (int32_t i = 0; i < count; ++i) {
        out[i] = quant->scale * (float)(edge_load(in, i, type) - quant->zero_point);
    }
    return MCU_OK;
}

mcu_status mcu_dequantize_u8_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                 const mcu_dims *dims, const uint8_t *in, float *out) {
    (void)ctx;
    return dequantize_core(quant, dims, in, EDGE_UINT8, out);
}

mcu_status mcu_dequantize_s8_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                 const mcu_dims *dims, const int8_t *in, float *out) {
    (void)ctx;
    return dequantize_core(quant, dims, in, MCU_INT8, out);
}

mcu_status mcu_dequantize_s16_f32(const mcu_context *ctx, const mcu_affine_quant *quant,
                                  const mcu_dims *dims, const int16_t *in, float *out) {
    (void)ctx;
    return dequantize_core(quant, dims, in, MCU_INT16, out);
}
