/*
 * reshape.c - Reshape / Flatten / Squeeze on quantized tensors: the bytes do not change,
 * so this is a copy (none at all when the planner places output and input together).
 */
#include <string.h>

#include "mcu_internal.h"

mcu_status mcu_reshape(const mcu_context *ctx, const mcu_dims *dims, int32_t element_size,
                       const void *in, void *out) {
    (void)ctx;
    if (!mcu_dims_valid(dims) || in == NULL || out == NULL
        || (element_size != 1 && element_size != 2 && element_size != 4)) {
        return MCU_ERR_ARG;
    }
    if (in != out) {
        memmove(out, in, (size_t)mcu_dims_count(dims) * (size_t)element_size);
    }
    return MCU_OK;
}
