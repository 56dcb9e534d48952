/*
 * pool.c - average and max pooling, NHWC, int8 and int16 (no rescaling).
 *
 * Over the in-bounds elements of each window (padding never counts):
 *   average: acc > 0 ? (acc + count/2) / count : (acc - count/2) / count   (C division)
 *   max:     the largest element
 * then clamp to the fused activation. Spec: reference/int_kernels/pool.py.
 */
#include "mcu_internal.h"

typedef enum { POOL_AVERAGE, POOL_MAX } pool_kind;

static int32_t window_value(const mcu_pool_params *params, pool_kind kind, const mcu_dims *in_dims,
                            const void *in, mcu_element_type type, int32_t n, int32_t out_y,
                            int32_t out_x, int32_t c) {
    int32_t in_y0 = out_y * params->stride_h - params->pad_top;
    int32_t in_x0 = out_x * params->stride_w - params->pad_left;
    int64_t total = 0;
    int32_t count = 0, maximum = mcu_type_min(type);
    for (int32_t i = 0; i < params->kernel_h; ++i) {
        int32_t in_y = in_y0 + i;
        if (in_y < 0 || in_y >= in_dims->h) {
            continue;
        }
        for (int32_t j = 0; j < params->kernel_w; ++j) {
            int32_t in_x = in_x0 + j;
            if (in_x < 0 || in_x >= in_dims->w) {
                continue;
            }
            int32_t value = mcu_load(in, ((n * in_dims->h + in_y) * in_dims->w + in_x) * in_dims->c + c, type);
            total += value;
            count += 1;
            maximum = value > maximum ? value : maximum;
        }
    }
    if (kind == POOL_MAX) {
        return maximum;
    }
    if (count == 0) {
        return 0; /* a window entirely in the padding: not produced by valid shapes */
    }
    return (int32_t)(total > 0 ? (total + count / 2) / count : (total - count / 2) / count);
}

static mcu_status pool_core(const mcu_pool_params *params, pool_kind kind, const mcu_dims *in_dims,
                            const void *in, const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_out_dims_valid(out_dims) || in == NULL || out == NULL
        || params->stride_h < 1 || params->stride_w < 1 || params->kernel_h < 1 || params->kernel_w < 1
        || params->pad_top < 0 || params->pad_left < 0 || in_dims->n != out_dims->n
        || in_dims->c != out_dims->c || !mcu_activation_valid(&params->activation, type)) {
        return MCU_ERR_ARG;
    }
    int32_t pixel = 0, pixel_stride = mcu_pixel_stride(out_dims);
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, pixel += pixel_stride) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t value = window_value(params, kind, in_dims, in, type, n, y, x, c);
                    mcu_store(out, pixel + c, type,
                              mcu_clamp(value, params->activation.min, params->activation.max));
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_avg_pool_s8(const mcu_context *ctx, const mcu_pool_params *params,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return pool_core(params, POOL_AVERAGE, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_avg_pool_s16(const mcu_context *ctx, const mcu_pool_params *params,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return pool_core(params, POOL_AVERAGE, in_dims, in, out_dims, out, MCU_INT16);
}

mcu_status mcu_max_pool_s8(const mcu_context *ctx, const mcu_pool_params *params,
                           const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return pool_core(params, POOL_MAX, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_max_pool_s16(const mcu_context *ctx, const mcu_pool_params *params,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return pool_core(params, POOL_MAX, in_dims, in, out_dims, out, MCU_INT16);
}
