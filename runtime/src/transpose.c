/*
 * transpose.c - 4-D transpose of any 1-, 2- or 4-byte elements: output axis k is input
 * axis perm[k], so out[o0, o1, o2, o3] = in[i] with i[perm[k]] = o_k.
 *
 * The output is written in order. Its axes are first reduced: size-1 axes dropped, and
 * neighbours that are neighbours in the input too (stride[k] = stride[k+1] * size[k+1])
 * merged, so NCHW -> NHWC, perm (0, 2, 3, 1), becomes the 2-D [H*W, C] <- [C, H*W].
 * Then either the innermost output axis is contiguous in the input (a row copy per
 * outer index) or the transpose is a stack of 2-D planes: the innermost output axis
 * ("row", input stride > 1) against the output axis read contiguously ("column", the
 * smallest input stride). A plane is copied as strided runs along its longer side, so
 * a 3-channel image runs 3 loops of H*W elements, not H*W loops of 3; for 1-byte
 * elements a run moves 4 elements per word load (contiguous read, strided write) or
 * word store (strided read, contiguous write).
 */
#include <string.h>

#include "mcu_internal.h"

typedef struct {
    int32_t rank;
    int32_t size[4];       /* output axes after the reduction, outermost first */
    int32_t in_stride[4];  /* elements */
    int32_t out_stride[4]; /* elements */
} reduced_axes;

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

/* Drop size-1 axes, merge neighbours contiguous in both, then the output strides. */
static void reduce_axes(const int32_t size[4], const int32_t in_stride[4], reduced_axes *axes) {
    int32_t rank = 0;
    for (int32_t k = 0; k < 4; ++k) {
        if (size[k] == 1) {
            continue;
        }
        if (rank > 0 && axes->in_stride[rank - 1] == in_stride[k] * size[k]) {
            axes->size[rank - 1] *= size[k];
            axes->in_stride[rank - 1] = in_stride[k];
            continue;
        }
        axes->size[rank] = size[k];
        axes->in_stride[rank] = in_stride[k];
        ++rank;
    }
    axes->rank = rank;
    int32_t stride = 1;
    for (int32_t k = rank - 1; k >= 0; --k) {
        axes->out_stride[k] = stride;
        stride *= axes->size[k];
    }
}

/* count bytes out[k * out_step] = in[k * in_step], one of the steps 1. */
static void copy_run_1(uint8_t *out, int32_t out_step, const uint8_t *in, int32_t in_step, int32_t count) {
    int32_t k = 0;
    if (out_step == 1) {
        for (; k + 4 <= count; k += 4, in += 4 * in_step, out += 4) {
            uint32_t word = (uint32_t)in[0] | ((uint32_t)in[in_step] << 8) | ((uint32_t)in[2 * in_step] << 16)
                            | ((uint32_t)in[3 * in_step] << 24);
            memcpy(out, &word, 4);
        }
    } else if (in_step == 1) {
        for (; k + 4 <= count; k += 4, in += 4, out += 4 * out_step) {
            uint32_t word;
            memcpy(&word, in, 4);
            out[0] = (uint8_t)word;
            out[out_step] = (uint8_t)(word >> 8);
            out[2 * out_step] = (uint8_t)(word >> 16);
            out[3 * out_step] = (uint8_t)(word >> 24);
        }
    }
    for (; k < count; ++k, in += in_step, out += out_step) {
        *out = *in;
    }
}

static void copy_run_2(uint8_t *out, int32_t out_step, const uint8_t *in, int32_t in_step, int32_t count) {
    for (int32_t k = 0; k < count; ++k, in += 2 * in_step, out += 2 * out_step) {
        uint16_t element;
        memcpy(&element, in, 2);
        memcpy(out, &element, 2);
    }
}

static void copy_run_4(uint8_t *out, int32_t out_step, const uint8_t *in, int32_t in_step, int32_t count) {
    for (int32_t k = 0; k < count; ++k, in += 4 * in_step, out += 4 * out_step) {
        uint32_t element;
        memcpy(&element, in, 4);
        memcpy(out, &element, 4);
    }
}

typedef void (*copy_run)(uint8_t *, int32_t, const uint8_t *, int32_t, int32_t);

/* One plane: out[r * row_out + c * col_out] = in[r * row_in + c * col_in], runs along the longer side. */
static void copy_plane(copy_run run, int32_t element_size, uint8_t *out, const uint8_t *in,
                       const reduced_axes *axes, int32_t row, int32_t column) {
    int32_t rows = axes->size[row], columns = axes->size[column];
    int32_t row_in = axes->in_stride[row], column_in = axes->in_stride[column];
    int32_t row_out = axes->out_stride[row], column_out = axes->out_stride[column];
    if (rows >= columns) {
        for (int32_t c = 0; c < columns; ++c) {
            run(out + (size_t)c * column_out * element_size, row_out, in + (size_t)c * column_in * element_size,
                row_in, rows);
        }
    } else {
        for (int32_t r = 0; r < rows; ++r) {
            run(out + (size_t)r * row_out * element_size, column_out, in + (size_t)r * row_in * element_size,
                column_in, columns);
        }
    }
}

/* Every plane (row = innermost output axis, column = the smallest input stride), looping the other axes. */
static void copy_planes(int32_t element_size, uint8_t *out, const uint8_t *in, const reduced_axes *axes) {
    copy_run run = element_size == 1 ? copy_run_1 : element_size == 2 ? copy_run_2 : copy_run_4;
    int32_t row = axes->rank - 1, column = 0, count = 0;
    for (int32_t k = 1; k < row; ++k) {
        column = axes->in_stride[k] < axes->in_stride[column] ? k : column;
    }
    int32_t size[2] = {1, 1}, in_step[2] = {0, 0}, out_step[2] = {0, 0};
    for (int32_t k = 0; k < row; ++k) {
        if (k != column) {
            size[count] = axes->size[k], in_step[count] = axes->in_stride[k], out_step[count] = axes->out_stride[k];
            ++count;
        }
    }
    for (int32_t a = 0; a < size[0]; ++a) {
        for (int32_t b = 0; b < size[1]; ++b) {
            size_t in_offset = (size_t)(a * in_step[0] + b * in_step[1]) * element_size;
            size_t out_offset = (size_t)(a * out_step[0] + b * out_step[1]) * element_size;
            copy_plane(run, element_size, out + out_offset, in + in_offset, axes, row, column);
        }
    }
}

/* The innermost output axis is contiguous in the input: one row copy per outer index. */
static void copy_rows(int32_t element_size, uint8_t *out, const uint8_t *in, const reduced_axes *axes) {
    int32_t last = axes->rank - 1, index[3] = {0, 0, 0};
    size_t row_bytes = (size_t)axes->size[last] * (size_t)element_size;
    int32_t rows = 1;
    for (int32_t k = 0; k < last; ++k) {
        rows *= axes->size[k];
    }
    for (int32_t r = 0; r < rows; ++r, out += row_bytes) {
        int32_t source = 0;
        for (int32_t k = 0; k < last; ++k) {
            source += index[k] * axes->in_stride[k];
        }
        memcpy(out, in + (size_t)source * (size_t)element_size, row_bytes);
        for (int32_t k = last - 1; k >= 0 && ++index[k] == axes->size[k]; --k) {
            index[k] = 0;
        }
    }
}

mcu_status mcu_transpose(const mcu_context *ctx, const mcu_transpose_params *params,
                         int32_t element_size, const mcu_dims *in_dims, const void *in,
                         const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (params == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || (element_size != 1 && element_size != 2 && element_size != 4) || !permutation_valid(params->perm)) {
        return MCU_ERR_ARG;
    }
    int32_t in_stride[4], stride = 1, out_size[4], out_in_stride[4];
    for (int32_t axis = 3; axis >= 0; --axis) {
        in_stride[axis] = stride;
        stride *= mcu_dims_at(in_dims, axis);
    }
    for (int32_t k = 0; k < 4; ++k) {
        out_size[k] = mcu_dims_at(out_dims, k);
        out_in_stride[k] = in_stride[params->perm[k]];
        if (out_size[k] != mcu_dims_at(in_dims, params->perm[k])) {
            return MCU_ERR_ARG;
        }
    }
    reduced_axes axes;
    reduce_axes(out_size, out_in_stride, &axes);
    if (axes.rank == 0 || axes.in_stride[axes.rank - 1] == 1) {
        if (axes.rank == 0) {
            axes.rank = 1, axes.size[0] = 1, axes.in_stride[0] = 1;
        }
        copy_rows(element_size, (uint8_t *)out, (const uint8_t *)in, &axes);
    } else {
        copy_planes(element_size, (uint8_t *)out, (const uint8_t *)in, &axes);
    }
    return MCU_OK;
}
