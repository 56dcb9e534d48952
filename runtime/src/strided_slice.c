/*
 * strided_slice.c - strided slice of any 1-, 2- or 4-byte elements: on every axis
 * out[o] = in[begin + o * stride] (stride may be negative; every index read is checked
 * to lie inside the input before anything is written).
 */
#include <string.h>

#include "mcu_internal.h"

mcu_status mcu_strided_slice(const mcu_context *ctx, const mcu_strided_slice_params *params,
                             int32_t element_size, const mcu_dims *in_dims, const void *in,
                             const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || (element_size != 1 && element_size != 2 && element_size != 4)) {
        return MCU_ERR_ARG;
    }
    int32_t in_stride[4], stride = 1;
    for (int32_t axis = 3; axis >= 0; --axis) {
        int32_t size = mcu_dims_at(in_dims, axis);
        int32_t last = params->begin[axis] + (mcu_dims_at(out_dims, axis) - 1) * params->stride[axis];
        if (params->stride[axis] == 0 || params->begin[axis] < 0 || params->begin[axis] >= size || last < 0
            || last >= size) {
            return MCU_ERR_ARG;
        }
        in_stride[axis] = stride;
        stride *= size;
    }
    const int32_t *begin = params->begin, *step = params->stride;
    char *destination = (char *)out;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t source = (begin[0] + n * step[0]) * in_stride[0]
                                     + (begin[1] + y * step[1]) * in_stride[1]
                                     + (begin[2] + x * step[2]) * in_stride[2]
                                     + (begin[3] + c * step[3]) * in_stride[3];
                    memcpy(destination, (const char *)in + (size_t)source * (size_t)element_size,
                           (size_t)element_size);
                    destination += element_size;
                }
            }
        }
    }
    return MCU_OK;
}
