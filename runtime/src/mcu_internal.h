/*
 * mcu_internal.h - helpers shared by the kernel sources (not part of the public API):
 * argument checks, element counts, typed loads / stores for kernels that serve several
 * element types, and the accumulator -> output requantization of the dot-product kernels.
 */
#ifndef MCU_INTERNAL_H
#define MCU_INTERNAL_H

#include "mcu_fixed_point.h"
#include "mcu_runtime.h"

/* Element types of the type-generic kernel cores. */
typedef enum { MCU_INT8 = 1, MCU_INT16 = 2, MCU_INT32 = 4 } mcu_element_type;

/* Positive extents and dense (c_stride 0 or c): what every input and most outputs need. */
static inline int32_t mcu_dims_valid(const mcu_dims *dims) {
    return dims != NULL && dims->n > 0 && dims->h > 0 && dims->w > 0 && dims->c > 0
           && (dims->c_stride == 0 || dims->c_stride == dims->c);
}

/* The output dims of a kernel that honours an output channel stride (c_stride 0 or >= c). */
static inline int32_t mcu_out_dims_valid(const mcu_dims *dims) {
    return dims != NULL && dims->n > 0 && dims->h > 0 && dims->w > 0 && dims->c > 0
           && (dims->c_stride == 0 || dims->c_stride >= dims->c);
}

/* Elements from one pixel to the next: c_stride, or c when dense. */
static inline int32_t mcu_pixel_stride(const mcu_dims *dims) {
    return dims->c_stride > 0 ? dims->c_stride : dims->c;
}

static inline int32_t mcu_dims_count(const mcu_dims *dims) {
    return dims->n * dims->h * dims->w * dims->c;
}

static inline int32_t mcu_dims_equal(const mcu_dims *a, const mcu_dims *b) {
    return a->n == b->n && a->h == b->h && a->w == b->w && a->c == b->c;
}

static inline int32_t mcu_dims_at(const mcu_dims *dims, int32_t axis) {
    return axis == 0 ? dims->n : axis == 1 ? dims->h : axis == 2 ? dims->w : dims->c;
}

static inline int32_t mcu_type_min(mcu_element_type type) {
    return type == MCU_INT8 ? INT8_MIN : type == MCU_INT16 ? INT16_MIN : INT32_MIN;
}

static inline int32_t mcu_type_max(mcu_element_type type) {
    return type == MCU_INT8 ? INT8_MAX : type == MCU_INT16 ? INT16_MAX : INT32_MAX;
}

static inline int32_t mcu_load(const void *data, int32_t index, mcu_element_type type) {
    if (type == MCU_INT8) {
        return ((const int8_t *)data)[index];
    }
    if (type == MCU_INT16) {
        return ((const int16_t *)data)[index];
    }
    return ((const int32_t *)data)[index];
}

static inline void mcu_store(void *data, int32_t index, mcu_element_type type, int32_t value) {
    if (type == MCU_INT8) {
        ((int8_t *)data)[index] = (int8_t)value;
    } else if (type == MCU_INT16) {
        ((int16_t *)data)[index] = (int16_t)value;
    } else {
        ((int32_t *)data)[index] = value;
    }
}

/* Leading zero bits of x (32 for 0). */
static inline int32_t mcu_count_leading_zeros(uint32_t x) {
    int32_t count = 0;
    while (count < 32 && !(x & 0x80000000u)) {
        x <<= 1;
        ++count;
    }
    return count;
}

/* Element strides of `dims` as seen from the output's index space (0 where a dimension
 * of 1 broadcasts); 0 when `dims` does not broadcast to `out_dims`. */
static inline int32_t mcu_broadcast_strides(const mcu_dims *dims, const mcu_dims *out_dims,
                                            int32_t strides[4]) {
    int32_t stride = 1;
    for (int32_t axis = 3; axis >= 0; --axis) {
        int32_t size = mcu_dims_at(dims, axis);
        if (size != mcu_dims_at(out_dims, axis) && size != 1) {
            return 0;
        }
        strides[axis] = size == 1 ? 0 : stride;
        stride *= size;
    }
    return 1;
}

static inline int32_t mcu_activation_valid(const mcu_activation *activation, mcu_element_type type) {
    return activation->min <= activation->max && activation->min >= mcu_type_min(type)
           && activation->max <= mcu_type_max(type);
}

/* Bias + requantization of one dot-product accumulator (kept exact in int64):
 * s8 kernels (wide == 0): Y = mbqm(wrap32(acc + bias32), m, s) + offset (int32 form);
 * s16 kernels (wide == 1): Y = mbqm64(acc + bias64, m, s) + offset (int64 form). */
typedef struct {
    const int32_t *multiplier;
    const int32_t *shift;
    const int32_t *bias32; /* s8 kernels, may be NULL */
    const int64_t *bias64; /* s16 kernels, may be NULL */
    int32_t wide;
    int32_t output_offset;
    mcu_activation activation;
} mcu_accumulator_output;

static inline int32_t mcu_output_from_accumulator(const mcu_accumulator_output *output, int64_t acc,
                                                  int32_t channel) {
    int32_t scaled;
    if (output->wide) {
        acc += output->bias64 != NULL ? output->bias64[channel] : 0;
        scaled = mcu_mbqm64(acc, output->multiplier[channel], output->shift[channel]);
    } else {
        acc += output->bias32 != NULL ? output->bias32[channel] : 0;
        scaled = mcu_mbqm((int32_t)(uint32_t)(uint64_t)acc, output->multiplier[channel],
                          output->shift[channel]);
    }
    return mcu_clamp_add(scaled, output->output_offset, output->activation.min,
                         output->activation.max);
}

/* gemmlowp fixed-point functions (fixed_point_functions.c) on raw Q(integer_bits) int32. */
int32_t mcu_fp_exp_on_negative_values(int32_t a, int32_t integer_bits);
int32_t mcu_fp_one_over_one_plus_x(int32_t a);
int32_t mcu_fp_logistic(int32_t a, int32_t integer_bits);
int32_t mcu_fp_tanh(int32_t a, int32_t integer_bits);
/* TFLite GetReciprocal: 1/x = result * 2^-num_bits_over_unit for positive Q(digits) x. */
int32_t mcu_fp_get_reciprocal(int32_t x, int32_t x_integer_digits, int32_t *num_bits_over_unit);

#endif /* MCU_INTERNAL_H */
