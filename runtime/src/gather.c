/*
 * gather.c - Gather (TFLite GATHER, ONNX Gather) and Tile: raw elements are copied, any
 * element size (1, 2 or 4 bytes), so quantized tensors keep their scale and zero point.
 *
 *   Gather: with outer = prod(in dims before axis), S = in dims[axis], inner = prod(after),
 *           out[o, j, i] = in[o, indices[j] (+ S if negative), i] for j < index_count;
 *           an index outside [-S, S) is MCU_ERR_ARG.
 *   Tile:   out[n, h, w, c] = in[n % N, h % H, w % W, c % C], out dims = in dims * repeats.
 * Spec: reference/int_kernels/gather.py.
 */
#include <string.h>

#include "mcu_internal.h"

static int32_t element_size_valid(int32_t element_size) {
    return element_size == 1 || element_size == 2 || element_size == 4;
}

mcu_status mcu_gather(const mcu_context *ctx, const mcu_gather_params *params, int32_t element_size,
                      const mcu_dims *in_dims, const void *in, int32_t index_count, const int32_t *indices,
                      void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || in == NULL || indices == NULL || out == NULL
        || index_count <= 0 || params->axis < 0 || params->axis > 3 || !element_size_valid(element_size)) {
        return MCU_ERR_ARG;
    }
    int32_t outer = 1, inner = 1, size = mcu_dims_at(in_dims, params->axis);
    for (int32_t axis = 0; axis < 4; ++axis) {
        outer *= axis < params->axis ? mcu_dims_at(in_dims, axis) : 1;
        inner *= axis > params->axis ? mcu_dims_at(in_dims, axis) : 1;
    }
    for (int32_t j = 0; j < index_count; ++j) {
        if (indices[j] < -size || indices[j] >= size) {
            return MCU_ERR_ARG;
        }
    }
    const uint8_t *source = (const uint8_t *)in;
    uint8_t *target = (uint8_t *)out;
    size_t row = (size_t)inner * (size_t)element_size;
    for (int32_t o = 0; o < outer; ++o) {
        for (int32_t j = 0; j < index_count; ++j) {
            int32_t index = indices[j] < 0 ? indices[j] + size : indices[j];
            memcpy(target + ((size_t)o * (size_t)index_count + (size_t)j) * row,
                   source + ((size_t)o * (size_t)size + (size_t)index) * row, row);
        }
    }
    return MCU_OK;
}

mcu_status mcu_tile(const mcu_context *ctx, const mcu_tile_params *params, int32_t element_size,
                    const mcu_dims *in_dims, const void *in, const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !element_size_valid(element_size)) {
        return MCU_ERR_ARG;
    }
    for (int32_t axis = 0; axis < 4; ++axis) {
        if (params->repeats[axis] <= 0
            || mcu_dims_at(out_dims, axis) != mcu_dims_at(in_dims, axis) * params->repeats[axis]) {
            return MCU_ERR_ARG;
        }
    }
    const uint8_t *source = (const uint8_t *)in;
    uint8_t *target = (uint8_t *)out;
    size_t index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            for (int32_t x = 0; x < out_dims->w; ++x) {
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int32_t from = ((n % in_dims->n * in_dims->h + y % in_dims->h) * in_dims->w + x % in_dims->w)
                                   * in_dims->c + c % in_dims->c;
                    memcpy(target + index, source + (size_t)from * (size_t)element_size, (size_t)element_size);
                    index += (size_t)element_size;
                }
            }
        }
    }
    return MCU_OK;
}
