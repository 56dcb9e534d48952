/*
 * gemm_s16_mve.c - mcu_s16_mve_block: the 2x4 dot-product block of the 16x8 _mve kernels
 * (mcu_mve_s16.h): per eight k, the two columns' int16 lanes and the four rows' int8 lanes
 * widened to int16, eight VMLADAVA.S16 into int32 sums (exact per chunk of <= 504 k).
 */
#include "mcu_mve_s16.h"

typedef struct {
    int32_t s[8];
} block_sums;

static inline void accumulate(block_sums *b, mcu_s16x8 a, mcu_s16x8 c, const int8_t *w) {
    mcu_s16x8 r0 = mcu_vld_s8_s16(w), r1 = mcu_vld_s8_s16(w + 8), r2 = mcu_vld_s8_s16(w + 16);
    mcu_s16x8 r3 = mcu_vld_s8_s16(w + 24);
    b->s[0] = mcu_vmladava_s16(b->s[0], a, r0);
    b->s[1] = mcu_vmladava_s16(b->s[1], a, r1);
    b->s[2] = mcu_vmladava_s16(b->s[2], a, r2);
    b->s[3] = mcu_vmladava_s16(b->s[3], a, r3);
    b->s[4] = mcu_vmladava_s16(b->s[4], c, r0);
    b->s[5] = mcu_vmladava_s16(b->s[5], c, r1);
    b->s[6] = mcu_vmladava_s16(b->s[6], c, r2);
    b->s[7] = mcu_vmladava_s16(b->s[7], c, r3);
}

/* k in [start, end): whole groups of 8 plain, a last partial group predicated (columns). */
static void add_chunk(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t start, int32_t end,
                      int64_t sums[8]) {
    block_sums b = {{0, 0, 0, 0, 0, 0, 0, 0}};
    int32_t k = start;
    for (; k + 8 <= end; k += 8) {
        accumulate(&b, mcu_vld_s16(x0 + k), mcu_vld_s16(x1 + k), w + 4 * k);
    }
    if (k < end) {
        mcu_pred pred = mcu_vctp16(end - k);
        accumulate(&b, mcu_vld_s16_z(x0 + k, pred), mcu_vld_s16_z(x1 + k, pred), w + 4 * k);
    }
    for (int32_t i = 0; i < 8; ++i) {
        sums[i] += b.s[i];
    }
}

void mcu_s16_mve_block(const int16_t *x0, const int16_t *x1, const int8_t *w, int32_t depth, int64_t sums[8]) {
    for (int32_t i = 0; i < 8; ++i) {
        sums[i] = 0;
    }
    for (int32_t start = 0; start < depth; start += MCU_S16_CHUNK) {
        add_chunk(x0, x1, w, start, start + MCU_S16_CHUNK < depth ? start + MCU_S16_CHUNK : depth, sums);
    }
}
