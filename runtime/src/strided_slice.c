/*
 * strided_slice.c - strided slice of any 1-, 2- or 4-byte elements: on every axis
 * out[o] = in[begin + o * stride] (stride may be negative; every index read is checked
 * to lie inside the input before anything is written). Honours an out c_stride (mcu_runtime.h):
 * a Slice can write its channel slice of an NHWC concatenation in place (a tiled U-Net level
 * slices each stripe of a spilled skip tensor straight into its decoder concat). With a unit
 * channel step a pixel's channels are one contiguous run, copied at once.
 */
#include <stddef.h>
#include <string.h>

#include "mcu_internal.h"

mcu_status mcu_strided_slice(const mcu_context *ctx, const mcu_strided_slice_params *params,
                             int32_t element_size, const mcu_dims *in_dims, const void *in,
                             const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_out_dims_valid(out_dims) || in == NULL || out == NULL
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
    const size_t element = (size_t)element_size;
    const size_t pixel_bytes = (size_t)mcu_pixel_stride(out_dims) * element;
    char *pixel = (char *)out;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x, pixel += pixel_bytes) {
                int32_t source = (begin[0] + n * step[0]) * in_stride[0] + (begin[1] + y * step[1]) * in_stride[1]
                                 + (begin[2] + x * step[2]) * in_stride[2] + begin[3] * in_stride[3];
                const char *from = (const char *)in + (size_t)source * element;
                if (step[3] == 1) {
                    memcpy(pixel, from, (size_t)out_dims->c * element);
                    continue;
                }
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    memcpy(pixel + (size_t)c * element, from + (ptrdiff_t)c * step[3] * (ptrdiff_t)element, element);
                }
            }
        }
    }
    return MCU_OK;
}
