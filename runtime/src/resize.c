/*
 * resize.c - resize of h and w, NHWC (TFLite RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR).
 *
 * Nearest, float32 as TFLite: scale = in / out ((in - 1) / (out - 1) with align_corners and
 * out > 1); src = min(align_corners ? round_half_away(o * scale) : floor((o + offset) * scale),
 * in - 1), offset 0.5 with half-pixel centres (then max(src, 0)).
 *
 * Bilinear, integer with 10 fractional bits:
 *   scale10 = (2^10 in + out/2) / out   (align_corners: (2^10 (in-1) + (out-1)/2) / (out-1))
 *   v = o * scale10 (+ scale10/2 - 2^9 with half-pixel centres)
 *   lo = max(trunc(v / 2^10), 0), hi = min(trunc((v + 2^10 - 1) / 2^10), in - 1), f = v - 2^10 lo
 *   Y = trunc((sum of 4 neighbours * (2^10 - fy | fy) * (2^10 - fx | fx) +/- 2^19) / 2^20)
 * Spec: reference/int_kernels/resize.py. Nearest honours an out c_stride (mcu_runtime.h).
 */
#include <string.h>

#include "mcu_internal.h"

static int32_t resize_shapes_valid(const mcu_resize_params *params, const mcu_dims *in_dims, const void *in,
                                   const mcu_dims *out_dims, const void *out) {
    return params != NULL && mcu_dims_valid(in_dims) && mcu_out_dims_valid(out_dims) && in != NULL && out != NULL
           && in_dims->n == out_dims->n && in_dims->c == out_dims->c;
}

/* Source index along one axis for nearest-neighbour resizing. */
static int32_t nearest_index(const mcu_resize_params *params, int32_t o, int32_t in_size, int32_t out_size) {
    float scale = (params->align_corners && out_size > 1) ? (float)(in_size - 1) / (float)(out_size - 1)
                                                          : (float)in_size / (float)out_size;
    float offset = params->half_pixel_centers ? 0.5f : 0.0f;
    float position = ((float)o + offset) * scale; /* >= 0 */
    int32_t index = (int32_t)position;            /* floor of a non-negative value */
    if (params->align_corners && position - (float)index >= 0.5f) {
        index += 1;                                /* round half away from zero */
    }
    index = index < in_size - 1 ? index : in_size - 1;
    return index > 0 ? index : 0;
}

mcu_status mcu_resize_nearest(const mcu_context *ctx, const mcu_resize_params *params,
                              int32_t element_size, const mcu_dims *in_dims, const void *in,
                              const mcu_dims *out_dims, void *out) {
    (void)ctx;
    if (!resize_shapes_valid(params, in_dims, in, out_dims, out)
        || (element_size != 1 && element_size != 2 && element_size != 4)) {
        return MCU_ERR_ARG;
    }
    size_t pixel = (size_t)in_dims->c * (size_t)element_size;
    size_t pixel_stride = (size_t)mcu_pixel_stride(out_dims) * (size_t)element_size;
    size_t row_stride = pixel_stride * (size_t)out_dims->w;
    char *destination = (char *)out;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        int32_t previous_y = -1;
        for (int32_t y = 0; y < out_dims->h; ++y) {
            int32_t source_y = nearest_index(params, y, in_dims->h, out_dims->h);
            if (source_y == previous_y) {
                /* the same source row as the row above (an up-sampling): copy that output row,
                 * at once when the output is dense, else pixel by pixel within the stride */
                const char *above = destination - row_stride;
                if (pixel_stride == pixel) {
                    memcpy(destination, above, row_stride);
                    destination += row_stride;
                } else {
                    for (int32_t x = 0; x < out_dims->w; ++x, destination += pixel_stride) {
                        memcpy(destination, above + (size_t)x * pixel_stride, pixel);
                    }
                }
                continue;
            }
            previous_y = source_y;
            const char *row = (const char *)in + (size_t)(n * in_dims->h + source_y) * (size_t)in_dims->w * pixel;
            for (int32_t x = 0; x < out_dims->w; ++x) {
                int32_t source_x = nearest_index(params, x, in_dims->w, out_dims->w);
                memcpy(destination, row + (size_t)source_x * pixel, pixel);
                destination += pixel_stride;
            }
        }
    }
    return MCU_OK;
}

typedef struct {
    int32_t lower, upper, fraction; /* fraction in units of 2^-10 */
} bilinear_tap;

static bilinear_tap bilinear_tap_at(const mcu_resize_params *params, int32_t o, int32_t in_size,
                                    int32_t out_size) {
    int32_t scale = (params->align_corners && out_size > 1)
                        ? ((1 << 10) * (in_size - 1) + (out_size - 1) / 2) / (out_size - 1)
                        : ((1 << 10) * in_size + out_size / 2) / out_size;
    int32_t value = o * scale + (params->half_pixel_centers ? scale / 2 - (1 << 9) : 0);
    bilinear_tap tap;
    tap.lower = value / (1 << 10);
    tap.lower = tap.lower > 0 ? tap.lower : 0;
    tap.upper = (value + (1 << 10) - 1) / (1 << 10);
    tap.upper = tap.upper < in_size - 1 ? tap.upper : in_size - 1;
    tap.fraction = value - (1 << 10) * tap.lower;
    return tap;
}

static mcu_status bilinear_core(const mcu_resize_params *params, const mcu_dims *in_dims, const void *in,
                                const mcu_dims *out_dims, void *out, mcu_element_type type) {
    if (!resize_shapes_valid(params, in_dims, in, out_dims, out) || !mcu_dims_valid(out_dims)) {
        return MCU_ERR_ARG;   /* bilinear: dense output only */
    }
    const int64_t one = 1 << 10;
    int32_t index = 0;
    for (int32_t n = 0; n < out_dims->n; ++n) {
        for (int32_t y = 0; y < out_dims->h; ++y) {
            bilinear_tap ty = bilinear_tap_at(params, y, in_dims->h, out_dims->h);
            int32_t row0 = (n * in_dims->h + ty.lower) * in_dims->w, row1 = (n * in_dims->h + ty.upper) * in_dims->w;
            for (int32_t x = 0; x < out_dims->w; ++x) {
                bilinear_tap tx = bilinear_tap_at(params, x, in_dims->w, out_dims->w);
                for (int32_t c = 0; c < out_dims->c; ++c) {
                    int64_t y0x0 = mcu_load(in, (row0 + tx.lower) * in_dims->c + c, type);
                    int64_t y1x0 = mcu_load(in, (row1 + tx.lower) * in_dims->c + c, type);
                    int64_t y0x1 = mcu_load(in, (row0 + tx.upper) * in_dims->c + c, type);
                    int64_t y1x1 = mcu_load(in, (row1 + tx.upper) * in_dims->c + c, type);
                    int64_t total = y0x0 * (one - ty.fraction) * (one - tx.fraction)
                                    + y1x0 * ty.fraction * (one - tx.fraction)
                                    + y0x1 * (one - ty.fraction) * tx.fraction + y1x1 * ty.fraction * tx.fraction;
                    int64_t rounded = (total + (total > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
                    mcu_store(out, index++, type, (int32_t)rounded);
                }
            }
        }
    }
    return MCU_OK;
}

mcu_status mcu_resize_bilinear_s8(const mcu_context *ctx, const mcu_resize_params *params,
                                  const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims,
                                  int8_t *out) {
    (void)ctx;
    return bilinear_core(params, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_resize_bilinear_s16(const mcu_context *ctx, const mcu_resize_params *params,
                                   const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                                   int16_t *out) {
    (void)ctx;
    return bilinear_core(params, in_dims, in, out_dims, out, MCU_INT16);
}
