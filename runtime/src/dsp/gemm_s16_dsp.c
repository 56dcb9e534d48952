/*
 * gemm_s16_dsp.c - mcu_s16_dsp_block: the 2x2 dot-product block of the 16x8 _dsp kernels
 * (mcu_dsp_s16.h). The int16 columns are read as pairs (x0, x1), (x2, x3) (unaligned LDR);
 * a word of four weights (w0, w2, w1, w3) splits into (w0, w1) and (w2, w3):
 *
 *   s[p, r] += smlad(X_p(0, 1), W_r(0, 1)) + smlad(X_p(2, 3), W_r(2, 3))
 *
 * The two rows' words are 4 bytes apart ("s16 quad pairs"; one row alone: the same word
 * twice). int32 partial sums over <= 504 k are exact (mcu_s16_variants.h), added to int64
 * sums; the K % 4 tails are summed plainly.
 */
#include "mcu_dsp_s16.h"

#if defined(__GNUC__)
#define MCU_S16_INLINE static inline __attribute__((always_inline))
#else
#define MCU_S16_INLINE static inline
#endif

/* `second` / `step`: the second row's word offset and the bytes per group (constants where inlined). */
MCU_S16_INLINE void add_chunk(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t groups,
                              int32_t second, int32_t step, int64_t sums[4]) {
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0;
    for (const int8_t *end = w + groups * step; w != end; x0 += 4, x1 += 4, w += step) {
        int32_t a = mcu_read32(w), b = mcu_read32(w + second);
        int32_t a01 = mcu_sxtb16(a), a23 = mcu_sxtb16_ror8(a);
        int32_t b01 = mcu_sxtb16(b), b23 = mcu_sxtb16_ror8(b);
        int32_t p01 = mcu_read32(x0), p23 = mcu_read32(x0 + 2);
        s00 = mcu_smlad(p01, a01, mcu_smlad(p23, a23, s00));
        s01 = mcu_smlad(p01, b01, mcu_smlad(p23, b23, s01));
        int32_t q01 = mcu_read32(x1), q23 = mcu_read32(x1 + 2);
        s10 = mcu_smlad(q01, a01, mcu_smlad(q23, a23, s10));
        s11 = mcu_smlad(q01, b01, mcu_smlad(q23, b23, s11));
    }
    sums[0] += s00;
    sums[1] += s01;
    sums[2] += s10;
    sums[3] += s11;
}

static void add_chunk_pair(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t groups, int64_t sums[4]) {
    add_chunk(x0, x1, w, groups, 4, 8, sums);
}

static void add_chunk_single(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t groups,
                             int64_t sums[4]) {
    add_chunk(x0, x1, w, groups, 0, 4, sums);
}

void mcu_s16_dsp_block(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t depth, int32_t pair,
                       int64_t sums[4]) {
    int32_t groups = depth / 4, chunk = MCU_S16_CHUNK / 4, step = pair ? 8 : 4, tail = depth - groups * 4;
    sums[0] = sums[1] = sums[2] = sums[3] = 0;
    for (int32_t g = 0; g < groups; g += chunk) {
        int32_t count = groups - g < chunk ? groups - g : chunk;
        if (pair) {
            add_chunk_pair(x0 + 4 * g, x1 + 4 * g, w + step * g, count, sums);
        } else {
            add_chunk_single(x0 + 4 * g, x1 + 4 * g, w + step * g, count, sums);
        }
    }
    const int8_t *tail0 = w + step * groups, *tail1 = pair ? tail0 + tail : tail0;
    for (int32_t k = 0; k < tail; ++k) {
        int32_t a = x0[groups * 4 + k], b = x1[groups * 4 + k];
        sums[0] += a * tail0[k];
        sums[1] += a * tail1[k];
        sums[2] += b * tail0[k];
        sums[3] += b * tail1[k];
    }
}
