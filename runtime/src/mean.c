/*
 * mean.c - TFLite MEAN over any subset of the n, h, w, c axes, int8 and int16.
 *
 *   Y = clamp(mbqm(wrap32(sum X - input_zero_point * count), multiplier, shift)
 *             + output_zero_point, type range)
 * where count is the number of reduced elements and multiplier / shift already include the
 * division by count (prepare: m' = (m << k) / count, s' = s - k). Spec:
 * reference/int_kernels/pool.py (ReduceMean).
 */
#include "mcu_internal.h"

static mcu_status mean_core(const mcu_mean_params *params, const mcu_mean_quant *quant,
                            const mcu_dims *in_dims, const void *in, const mcu_dims *out_dims, void *out,
                            mcu_element_type type) {
    if (params == NULL || quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims)
        || in == NULL || out == NULL) {
        return MCU_ERR_ARG;
    }
    int32_t in_size[4], reduced[4], in_stride[4], count = 1, stride = 1;
    for (int32_t axis = 3; axis >= 0; --axis) {
        in_size[axis] = mcu_dims_at(in_dims, axis);
        int32_t is_reduced = (params->axes >> axis) & 1;
        reduced[axis] = is_reduced ? in_size[axis] : 1;
        if (mcu_dims_at(out_dims, axis) != (is_reduced ? 1 : in_size[axis])) {
            return MCU_ERR_ARG;
        }
        in_stride[axis] = stride;
        stride *= in_size[axis];
        count *= reduced[axis];
    }
    int32_t low = mcu_type_min(type), high = mcu_type_max(type), index = 0;
    uint32_t offset = (uint32_t)quant->input_zero_point * (uint32_t)count;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    uint32_t total = 0;
                    for (int32_t rn = 0; rn < reduced[0]; ++rn) {
                        for (int32_t ry = 0; ry < reduced[1]; ++ry) {
                            for (int32_t rx = 0; rx < reduced[2]; ++rx) {
                                int32_t base = (n + rn) * in_stride[0] + (y + ry) * in_stride[1]
                                               + (x + rx) * in_stride[2] + c * in_stride[3];
                                for (int32_t rc = 0; rc < reduced[3]; ++rc) {
                                    total += (uint32_t)mcu_load(in, base + rc * in_stride[3], type);
                                }
                            }
                        }
                    }
                    int32_t scaled = mcu_mbqm((int32_t)(total - offset), quant->multiplier, quant->shift);
                    mcu_store(out, index++, type, mcu_clamp_add(scaled, quant->output_zero_point, low, high));
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_mean_s8(const mcu_context *ctx, const mcu_mean_params *params, const mcu_mean_quant *quant,
                       const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return mean_core(params, quant, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_mean_s16(const mcu_context *ctx, const mcu_mean_params *params, const mcu_mean_quant *quant,
                        const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    return mean_core(params, quant, in_dims, in, out_dims, out, MCU_INT16);
}
