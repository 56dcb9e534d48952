/*
 * transpose.c - 4-D transpose of any 1-, 2- or 4-byte elements: output axis k is input
 * axis perm[k], so out[o0, o1, o2, o3] = in[i] with i[perm[k]] = o_k.
 */
#include <string.h>

#include "mcu_internal.h"

static int32_t permutation_valid(const int32_t perm[4]) {
    int32_t seen = 0;
    for (int32_t k = 0; k < 4; ++k) {
        if (perm[k] < 0 || perm[k] > 3) {
            return 0;
        }
        seen |= 1 << perm[k];
    }
    return seen == 15;
}

mcu_status mcu_transpose(const mcu_context *ctx, const mcu_transpose_params *params,
                         int32_t element_size, const mcu_dims *in_dims, const void *in,
                         const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || (element_size != 1 && element_size != 2 && element_size != 4) || !permutation_valid(params->perm)) {
        return MCU_ERR_ARG;
    }
    int32_t in_stride[4], stride = 1, out_size[4];
    for (int32_t axis = 3; axis >= 0; --axis) {
        in_stride[axis] = stride;
        stride *= mcu_dims_at(in_dims, axis);
    }
    for (int32_t k = 0; k < 4; ++k) {
        out_size[k] = mcu_dims_at(out_dims, k);
        if (out_size[k] != mcu_dims_at(in_dims, params->perm[k])) {
            return MCU_ERR_ARG;
        }
    }
    const int32_t *p = params->perm;
    char *destination = (char *)out;
    for (int32_t a = 0; a < out_size[0]; ++a) {
        for (int32_t b = 0; b < out_size[1]; ++b) {
            for (int32_t c = 0; c < out_size[2]; ++c) {
                for (int32_t d = 0; d < out_size[3]; ++d) {
                    int32_t source = a * in_stride[p[0]] + b * in_stride[p[1]] + c * in_stride[p[2]]
                                     + d * in_stride[p[3]];
                    memcpy(destination, (const char *)in + (size_t)source * (size_t)element_size,
                           (size_t)element_size);
                    destination += element_size;
                }
            }
        }
    }
    return MCU_OK;
}
