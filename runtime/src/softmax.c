/*
 * softmax.c - TFLite Softmax over the last axis (c), int8 input, int8 or int16 output,
 * gemmlowp fixed point (no lookup table). Per row:
 *
 *   d     = X - max(X)                                   (<= 0)
 *   e     = exp_on_negative_values(srdhm(d << left_shift, multiplier), 5)   if d >= diff_min
 *   total = wrap32(sum rdbpot(e, 12))                    (Q12.19)
 *   r, k  = get_reciprocal(total, 12)                    (1/total = r * 2^-k)
 *   Y     = clamp(rdbpot(srdhm(r, e), k + 31 - bits) + type_min)   if d >= diff_min
 *         = type_min                                                otherwise
 * Spec: reference/int_kernels/softmax.py. A row of up to MCU_SOFTMAX_KEPT elements computes
 * each e once (kept on the stack for the output pass).
 */
#include "mcu_internal.h"

static int32_t scaled_exp(const mcu_softmax_quant *quant, int32_t difference) {
    int32_t rescaled = mcu_srdhm(mcu_wrap_shift_left(difference, quant->input_left_shift),
                                 quant->input_multiplier);
    return mcu_fp_exp_on_negative_values(rescaled, 5);
}

/* Rows up to this depth keep their exponentials (stack) for the output pass; longer rows
 * compute each twice, as the reference does. */
#define MCU_SOFTMAX_KEPT 32

static void softmax_row(const mcu_softmax_quant *quant, const int8_t *row, int32_t depth, void *out,
                        int32_t out_base, mcu_element_type out_type) {
    int32_t maximum = INT8_MIN, total = 0, bits_over_unit = 0, kept[MCU_SOFTMAX_KEPT];
    int32_t keep = depth <= MCU_SOFTMAX_KEPT;
    for (int32_t i = 0; i < depth; ++i) {
        maximum = row[i] > maximum ? row[i] : maximum;
    }
    for (int32_t i = 0; i < depth; ++i) {
        int32_t difference = row[i] - maximum;
        if (difference >= quant->diff_min) {
            int32_t exponential = scaled_exp(quant, difference);
            if (keep) {
                kept[i] = exponential;
            }
            total = mcu_wrap_add(total, mcu_rdbpot(exponential, 12));
        }
    }
    int32_t reciprocal = mcu_fp_get_reciprocal(total, 12, &bits_over_unit);
    int32_t bits = out_type == MCU_INT8 ? 8 : 16;
    int32_t low = mcu_type_min(out_type), high = mcu_type_max(out_type);
    for (int32_t i = 0; i < depth; ++i) {
        int32_t difference = row[i] - maximum, value = low;
        if (difference >= quant->diff_min) {
            int32_t exponential = keep ? kept[i] : scaled_exp(quant, difference);
            int32_t unsaturated = mcu_rdbpot(mcu_srdhm(reciprocal, exponential), bits_over_unit + 31 - bits);
            value = mcu_clamp_add(unsaturated, low, low, high);
        }
        mcu_store(out, out_base + i, out_type, value);
    }
}

static mcu_status softmax_core(const mcu_softmax_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                               const mcu_dims *out_dims, void *out, mcu_element_type out_type) {
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims) || quant->input_left_shift < 0 || quant->input_left_shift > 31) {
        return MCU_ERR_ARG;
    }
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c;
    for (int32_t r = 0; r < rows; ++r) {
        softmax_row(quant, in + r * depth, depth, out, r * depth, out_type);
    }
    return MCU_OK;
}

mcu_status mcu_softmax_s8(const mcu_context *ctx, const mcu_softmax_quant *quant,
                          const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    return softmax_core(quant, in_dims, in, out_dims, out, MCU_INT8);
}

mcu_status mcu_softmax_s8_s16(const mcu_context *ctx, const mcu_softmax_quant *quant,
                              const mcu_dims *in_dims, const int8_t *in, const mcu_dims *out_dims,
                              int16_t *out) {
    (void)ctx;
    return softmax_core(quant, in_dims, in, out_dims, out, MCU_INT16);
}
