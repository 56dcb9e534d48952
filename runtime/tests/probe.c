/*
 * probe.c - exports the inline fixed-point primitives of mcu_fixed_point.h and the gemmlowp
 * functions, elementwise over arrays, so the Python tests can compare them bit for bit with
 * arithmetic/fixed_point.py on edge values. Test builds only; not part of the runtime.
 */
#include "mcu_internal.h"

void mcu_probe_srdhm(const int32_t *a, const int32_t *b, int32_t *out, int32_t count);
void mcu_probe_rdbpot(const int32_t *x, const int32_t *exponent, int32_t *out, int32_t count);
void mcu_probe_mbqm(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t count);
void mcu_probe_mbqm64(const int64_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t count);
void mcu_probe_srdhm16(const int32_t *a, const int32_t *b, int32_t *out, int32_t count);
void mcu_probe_exp_on_negative_values(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count);
void mcu_probe_logistic(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count);
void mcu_probe_tanh(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count);
void mcu_probe_reciprocal(const int32_t *x, const int32_t *digits, int32_t *out, int32_t count);
void mcu_probe_bits_over_unit(const int32_t *x, const int32_t *digits, int32_t *out, int32_t count);

void mcu_probe_srdhm(const int32_t *a, const int32_t *b, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_srdhm(a[i], b[i]);
}

void mcu_probe_rdbpot(const int32_t *x, const int32_t *exponent, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_rdbpot(x[i], exponent[i]);
}

void mcu_probe_mbqm(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_mbqm(x[i], m[i], s[i]);
}

void mcu_probe_mbqm64(const int64_t *x, const int32_t *m, const int32_t *s, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_mbqm64(x[i], m[i], s[i]);
}

void mcu_probe_srdhm16(const int32_t *a, const int32_t *b, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_srdhm16(a[i], b[i]);
}

void mcu_probe_exp_on_negative_values(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_fp_exp_on_negative_values(a[i], bits[i]);
}

void mcu_probe_logistic(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_fp_logistic(a[i], bits[i]);
}

void mcu_probe_tanh(const int32_t *a, const int32_t *bits, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) out[i] = mcu_fp_tanh(a[i], bits[i]);
}

/* get_reciprocal's two results: the Q0.31 reciprocal and num_bits_over_unit. */
void mcu_probe_reciprocal(const int32_t *x, const int32_t *digits, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) {
        int32_t bits_over_unit = 0;
        out[i] = mcu_fp_get_reciprocal(x[i], digits[i], &bits_over_unit);
    }
}

void mcu_probe_bits_over_unit(const int32_t *x, const int32_t *digits, int32_t *out, int32_t count) {
    for (int32_t i = 0; i < count; ++i) {
        (void)mcu_fp_get_reciprocal(x[i], digits[i], &out[i]);
    }
}
