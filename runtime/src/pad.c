/*
 * pad.c - Pad of an NHWC tensor, int8 and int16, constant / reflect / edge modes.
 *
 * On every axis output index o reads input index i = o - before (negative `before` crops).
 * Outside [0, size): constant writes pad_value; reflect mirrors about the edge without
 * repeating it (i < 0 -> -i, i >= size -> 2 (size - 1) - i); edge clamps to the nearest
 * element. Spec: reference/int_kernels/shape.py (pad; numpy's "reflect" and "edge").
 */
#include "mcu_internal.h"

/* The input index read for output index `o`, or -1 for the constant pad value. */
static int32_t source_index(int32_t o, int32_t before, int32_t size, int32_t mode) {
    int32_t i = o - before;
    if (i >= 0 && i < size) {
        return i;
    }
    if (mode == MCU_PAD_EDGE) {
        return i < 0 ? 0 : size - 1;
    }
    if (mode == MCU_PAD_REFLECT && size > 1) {
        int32_t period = 2 * (size - 1);
        i = i % period;
        i = i < 0 ? i + period : i;
        return i < size ? i : period - i;
    }
    return mode == MCU_PAD_REFLECT ? 0 : -1;
}

static mcu_status pad_core(const mcu_pad_params *params, const mcu_dims *in_dims, const void *in,
                           const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || params->mode < MCU_PAD_CONSTANT || params->mode > MCU_PAD_EDGE
        || params->pad_value < mcu_type_min(type) || params->pad_value > mcu_type_max(type)) {
        return MCU_ERR_ARG;
    }
    int32_t index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        int32_t sn = source_index(n, params->before[0], in_dims->n, params->mode);
        for (int32_t y = 0; y < out_dims->h; ++y) {
            int32_t sy = source_index(y, params->before[1], in_dims->h, params->mode);
            for (int32_t x = 0; x < out_dims->w; ++x) {
                int32_t sx = source_index(x, params->before[2], in_dims->w, params->mode);
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t sc = source_index(c, params->before[3], in_dims->c, params->mode);
                    int32_t value = params->pad_value;
                    if (sn >= 0 && sy >= 0 && sx >= 0 && sc >= 0) {
                        value = mcu_load(in, ((sn * in_dims->h + sy) * in_dims->w + sx) * in_dims->c + sc, type);
                    }
                    mcu_store(out, index++, type, value);
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_pad_s8(const mcu_context *ctx, const mcu_pad_params *params,
                      const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return pad_core(params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_pad_s16(const mcu_context *ctx, const mcu_pad_params *params,
                       const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return pad_core(params, in_dims, in, out_dims, out, MCU_INT16);
}
