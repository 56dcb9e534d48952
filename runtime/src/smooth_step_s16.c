/*
 * smooth_step_s16.c - int16 Logistic (sigmoid) and Tanh, TFLite Micro semantics: a 256-entry
 * table T of sigmoid(i / 24) in Q0.16, linearly interpolated (tanh(x) = 2 sigmoid(2x) - 1).
 * Zero points 0, output scale 2^-15.
 *
 *   v = (X * input_multiplier + round) >> input_left_shift     (round = 2^(shift-1), or 0)
 *   a = |v|
 *   Logistic: i = a >> 9, f = a & 511, r = (T[i] << 9) + f (T[i+1] - T[i])  (0x7FFF << 10 if i >= 255)
 *             Y = v >= 0 ? (r + 2^9) >> 10 : (2^25 - r + 2^9 - 1) >> 10
 *   Tanh:     i = a >> 8, f = a & 255, r = (T[i] << 8) + f (T[i+1] - T[i])  (0xFFFF << 8 if i >= 255)
 *             Y = v >= 0 ? (r - 2^23 + 2^7) >> 8 : (-r + 2^23 + 2^7 - 1) >> 8
 * Spec: reference/int_kernels/smooth_step_int16.py.
 */
#include "mcu_internal.h"

/* The numbers of sigmoid_table_uint16 in tensorflow/lite/kernels/internal/common.h of
 * github.com/tensorflow/tflite-micro (commit 006a71b994ad35da2f827de8aa33e310bbf62ad3). */
static const uint16_t sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

static int32_t interpolate(uint32_t absolute, int32_t fraction_bits, uint32_t saturated) {
    uint32_t index = absolute >> fraction_bits;
    if (index >= 255u) {
        return (int32_t)saturated;
    }
    uint32_t low = sigmoid_table[index], high = sigmoid_table[index + 1u];
    uint32_t fraction = absolute & ((1u << fraction_bits) - 1u);
    return (int32_t)((low << fraction_bits) + fraction * (high - low));
}

static mcu_status check(const mcu_smooth_step_s16_quant *quant, const mcu_dims *in_dims, const int16_t *in,
                        const mcu_dims *out_dims, const int16_t *out) {
    if (quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(out_dims) || in == NULL || out == NULL
        || !mcu_dims_equal(in_dims, out_dims) || quant->input_multiplier < 0
        || quant->input_left_shift < 0 || quant->input_left_shift > 31
        || quant->input_multiplier > (quant->input_left_shift > 0 ? 32767 : 65535)) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

static int32_t rescale(const mcu_smooth_step_s16_quant *quant, int16_t x) {
    int32_t shift = quant->input_left_shift;
    int32_t rounding = shift > 0 ? (int32_t)(1u << (shift - 1)) : 0;
    return ((int32_t)x * quant->input_multiplier + rounding) >> shift;  /* < 2^31 (checked) */
}

mcu_status mcu_logistic_s16(const mcu_context *ctx, const mcu_smooth_step_s16_quant *quant,
                            const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims,
                            int16_t *out) {
    (void)ctx;
    mcu_status status = check(quant, in_dims, in, out_dims, out);
    int32_t count = status == MCU_OK ? mcu_dims_count(in_dims) : 0;
    for (int32_t i = 0; i < count; ++i) {
        int32_t value = rescale(quant, in[i]);
        uint32_t absolute = (uint32_t)(value < 0 ? -value : value);
        uint32_t result = (uint32_t)interpolate(absolute, 9, 0x7FFFu << 10);
        result = value >= 0 ? result + (1u << 9) : (1u << 25) - result + (1u << 9) - 1u;
        out[i] = (int16_t)(result >> 10);
    }
    return status;
}

mcu_status mcu_tanh_s16(const mcu_context *ctx, const mcu_smooth_step_s16_quant *quant,
                        const mcu_dims *in_dims, const int16_t *in, const mcu_dims *out_dims, int16_t *out) {
    (void)ctx;
    mcu_status status = check(quant, in_dims, in, out_dims, out);
    int32_t count = status == MCU_OK ? mcu_dims_count(in_dims) : 0;
    for (int32_t i = 0; i < count; ++i) {
        int32_t value = rescale(quant, in[i]);
        uint32_t absolute = (uint32_t)(value < 0 ? -value : value);
        int32_t result = interpolate(absolute, 8, 0xFFFFu << 8);
        result = value >= 0 ? result - (1 << 23) + (1 << 7) : -result + (1 << 23) + (1 << 7) - 1;
        out[i] = (int16_t)(result >> 8); /* arithmetic shift, as the runtime assumes */
    }
    return status;
}
