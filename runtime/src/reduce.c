/*
 * reduce.c - ReduceMax / ReduceMin over any subset of the n, h, w, c axes (TFLite
 * REDUCE_MAX / REDUCE_MIN: raw integers, input and output share scale and zero point) and
 * ArgMax / ArgMin along one axis (raw integers compared; ties give the first index, or the
 * last with select_last_index; int32 indices). Sum (TFLite SUM) is mcu_mean_* with the
 * undivided multiplier. Spec: reference/int_kernels/reduce.py.
 */
#include "mcu_internal.h"

static mcu_status reduce_extreme(int32_t is_max, const mcu_reduce_params *params, const mcu_dims *in_dims,
                                 const void *in, const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t reduced[4], in_stride[4], stride = 1;
    for (int32_t axis = 3; axis >= 0; --axis) {
        int32_t size = mcu_dims_at(in_dims, axis), is_reduced = (params->axes >> axis) & 1;
        reduced[axis] = is_reduced ? size : 1;
        if (mcu_dims_at(out_dims, axis) != (is_reduced ? 1 : size)) {
            return MCU_ERR_ARG;
        }
        in_stride[axis] = stride;
        stride *= size;
    }
    int32_t index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t best = is_max ? mcu_type_min(type) : mcu_type_max(type);
                    for (int32_t rn = 0; rn < reduced[0]; ++rn) {
                        for (int32_t ry = 0; ry < reduced[1]; ++ry) {
                            for (int32_t rx = 0; rx < reduced[2]; ++rx) {
                                int32_t base = (n + rn) * in_stride[0] + (y + ry) * in_stride[1]
                                               + (x + rx) * in_stride[2] + c * in_stride[3];
                                for (int32_t rc = 0; rc < reduced[3]; ++rc) {
                                    int32_t value = mcu_load(in, base + rc * in_stride[3], type);
                                    best = is_max ? (value > best ? value : best) : (value < best ? value : best);
                                }
                            }
                        }
                    }
                    mcu_store(out, index++, type, best);
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_reduce_max_s8(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                             const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return reduce_extreme(1, params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_reduce_max_s16(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                              const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return reduce_extreme(1, params, in_dims, in, out_dims, out, MCU_INT16);
}

mcu_status mcu_reduce_min_s8(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                             const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return reduce_extreme(0, params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_reduce_min_s16(const mcu_context *ctx, const mcu_reduce_params *params, const mcu_dims *in_dims,
                              const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return reduce_extreme(0, params, in_dims, in, out_dims, out, MCU_INT16);
}

static mcu_status arg_extreme(int32_t is_max, const mcu_arg_params *params, const mcu_dims *in_dims,
                              const void *in, const mcu_dims *out_dims, int32_t *out, mcu_element_type type) {
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || params->axis < 0 || params->axis > 3) {
        return MCU_ERR_ARG;
    }
    int32_t outer = 1, inner = 1, size = mcu_dims_at(in_dims, params->axis);
    for (int32_t axis = 0; axis < 4; ++axis) {
        int32_t extent = mcu_dims_at(in_dims, axis);
        if (mcu_dims_at(out_dims, axis) != (axis == params->axis ? 1 : extent)) {
            return MCU_ERR_ARG;
        }
        outer *= axis < params->axis ? extent : 1;
        inner *= axis > params->axis ? extent : 1;
    }
    for (int32_t o = 0; o < outer; ++o) {
        for (int32_t i = 0; i < inner; ++i) {
            int32_t best = mcu_load(in, o * size * inner + i, type), best_index = 0;
            for (int32_t k = 1; k < size; ++k) {
                int32_t value = mcu_load(in, (o * size + k) * inner + i, type);
                int32_t better = is_max ? value > best : value < best;
                if (better || (params->select_last_index && value == best)) {
                    best = value;
                    best_index = k;
                }
            }
            out[o * inner + i] = best_index;
        }
    }
    return MCU_OK;
}

mcu_status mcu_arg_max_s8(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                          const int8_t *in, const mcu_dims *out_dims, int32_t *out) {
    (void)ctx;
    return arg_extreme(1, params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_arg_max_s16(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                           const int16_t *in, const mcu_dims *out_dims, int32_t *out) {
    (void)ctx;
    return arg_extreme(1, params, in_dims, in, out_dims, out, MCU_INT16);
}

mcu_status mcu_arg_min_s8(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                          const int8_t *in, const mcu_dims *out_dims, int32_t *out) {
    (void)ctx;
    return arg_extreme(0, params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_arg_min_s16(const mcu_context *ctx, const mcu_arg_params *params, const mcu_dims *in_dims,
                           const int16_t *in, const mcu_dims *out_dims, int32_t *out) {
    (void)ctx;
    return arg_extreme(0, params, in_dims, in, out_dims, out, MCU_INT16);
}
