/*
 * mcu_dsp_dot.h - the dot-product blocks of the _dsp conv and fully connected kernels
 * (internal header): q15 columns times int8 weight rows, four k per step, SMLAD.
 *
 * Layouts (K padded to Kp = ceil4(K); "group" = four consecutive k):
 *   columns  two q15 columns interleaved by group: column c's group g at halfword 8g + 4c,
 *            each group stored (x0, x2, x1, x3)
 *   weights  rows interleaved by pairs: rows 2q and 2q+1 start at byte 2q*Kp, group g of
 *            row 2q at 8g, of row 2q+1 at 8g + 4 (natural byte order inside a group); an odd
 *            last row is plain, group g at 4g
 * SXTB16 / SXTB16 ROR 8 split a weight word into (w0, w2) / (w1, w3), which meet the
 * column's (x0, x2) / (x1, x3) halves in one SMLAD each:
 *   acc += x0*w0 + x2*w2;  acc += x1*w1 + x3*w3.
 *
 *   mcu_dsp_dot_2x2: 2 columns x 2 rows; per group 3 LDRD, 4 SXTB16, 8 SMLAD (16 MACs), two groups
 *                    per loop iteration
 *   mcu_dsp_dot_1x2, _2x1, _1x1: the remainders (an odd pixel, an odd row)
 * All accumulate mod 2^32 (SMLAD wraps), which is exact for the bounded accumulators the
 * variants accept.
 */
#ifndef MCU_DSP_DOT_H
#define MCU_DSP_DOT_H

#include "mcu_dsp_simd.h"

#if MCU_DSP_NATIVE
/* One group of the 2x2 block: 3 LDRD, 4 SXTB16, 8 SMLAD. */
#define MCU_DOT_2X2_GROUP                          \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"            \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"            \
    "sxtb16 %[wc], %[wa]\n\t"                      \
    "sxtb16 %[wa], %[wa], ror #8\n\t"              \
    "sxtb16 %[wd], %[wb]\n\t"                      \
    "sxtb16 %[wb], %[wb], ror #8\n\t"              \
    "smlad %[a00], %[xa], %[wc], %[a00]\n\t"       \
    "smlad %[a01], %[xa], %[wd], %[a01]\n\t"       \
    "smlad %[a00], %[xb], %[wa], %[a00]\n\t"       \
    "smlad %[a01], %[xb], %[wb], %[a01]\n\t"       \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"            \
    "smlad %[a10], %[xa], %[wc], %[a10]\n\t"       \
    "smlad %[a11], %[xa], %[wd], %[a11]\n\t"       \
    "smlad %[a10], %[xb], %[wa], %[a10]\n\t"       \
    "smlad %[a11], %[xb], %[wb], %[a11]\n\t"

/* Hand-scheduled loop (GCC 12 keeps the column loads as four LDR and spills a pointer), two
 * groups per iteration after an odd first one: 31 instructions per 32 MACs. groups >= 1. */
static inline void mcu_dsp_dot_2x2(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[4]) {
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    int32_t wa, wb, wc, wd, xa, xb;
    __asm__ volatile(
        "tst %[groups], #1\n\t"
        "beq 2f\n\t"
        MCU_DOT_2X2_GROUP
        "2:\n\t"
        "lsrs %[groups], %[groups], #1\n\t"
        "beq 3f\n\t"
        "1:\n\t"
        MCU_DOT_2X2_GROUP
        MCU_DOT_2X2_GROUP
        "subs %[groups], %[groups], #1\n\t"
        "bne 1b\n\t"
        "3:\n\t"
        : [a00] "+r"(a00), [a01] "+r"(a01), [a10] "+r"(a10), [a11] "+r"(a11), [x] "+r"(x), [w] "+r"(w),
          [groups] "+r"(groups), [wa] "=&r"(wa), [wb] "=&r"(wb), [wc] "=&r"(wc), [wd] "=&r"(wd),
          [xa] "=&r"(xa), [xb] "=&r"(xb)
        :
        : "cc", "memory");
    acc[0] = a00;
    acc[1] = a01;
    acc[2] = a10;
    acc[3] = a11;
}
#else
static inline void mcu_dsp_dot_2x2(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[4]) {
    for (; groups > 0; --groups, x += 8, w += 8) {
        int32_t wa = mcu_read32(w), wb = mcu_read32(w + 4);
        int32_t wa02 = mcu_sxtb16(wa), wa13 = mcu_sxtb16_ror8(wa);
        int32_t wb02 = mcu_sxtb16(wb), wb13 = mcu_sxtb16_ror8(wb);
        int32_t x02 = mcu_read32(x), x13 = mcu_read32(x + 2);
        acc[0] = mcu_smlad(x13, wa13, mcu_smlad(x02, wa02, acc[0]));
        acc[1] = mcu_smlad(x13, wb13, mcu_smlad(x02, wb02, acc[1]));
        x02 = mcu_read32(x + 4);
        x13 = mcu_read32(x + 6);
        acc[2] = mcu_smlad(x13, wa13, mcu_smlad(x02, wa02, acc[2]));
        acc[3] = mcu_smlad(x13, wb13, mcu_smlad(x02, wb02, acc[3]));
    }
}
#endif

/* One column (stride 8 halfwords per group) x a pair of interleaved rows. */
static inline void mcu_dsp_dot_1x2(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[2]) {
    int32_t a0 = acc[0], a1 = acc[1];
    for (; groups > 0; --groups, x += 8, w += 8) {
        int32_t wa = mcu_read32(w), wb = mcu_read32(w + 4);
        int32_t x02 = mcu_read32(x), x13 = mcu_read32(x + 2);
        a0 = mcu_smlad(x13, mcu_sxtb16_ror8(wa), mcu_smlad(x02, mcu_sxtb16(wa), a0));
        a1 = mcu_smlad(x13, mcu_sxtb16_ror8(wb), mcu_smlad(x02, mcu_sxtb16(wb), a1));
    }
    acc[0] = a0;
    acc[1] = a1;
}

/* Two interleaved columns x one plain row (the odd last output channel). */
static inline void mcu_dsp_dot_2x1(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc[2]) {
    int32_t a0 = acc[0], a1 = acc[1];
    for (; groups > 0; --groups, x += 8, w += 4) {
        int32_t word = mcu_read32(w);
        int32_t w02 = mcu_sxtb16(word), w13 = mcu_sxtb16_ror8(word);
        a0 = mcu_smlad(mcu_read32(x + 2), w13, mcu_smlad(mcu_read32(x), w02, a0));
        a1 = mcu_smlad(mcu_read32(x + 6), w13, mcu_smlad(mcu_read32(x + 4), w02, a1));
    }
    acc[0] = a0;
    acc[1] = a1;
}

/* One column (stride 8 per group) x one plain row. */
static inline int32_t mcu_dsp_dot_1x1(const int16_t *x, const int8_t *w, int32_t groups, int32_t acc) {
    for (; groups > 0; --groups, x += 8, w += 4) {
        int32_t word = mcu_read32(w);
        acc = mcu_smlad(mcu_read32(x + 2), mcu_sxtb16_ror8(word), mcu_smlad(mcu_read32(x), mcu_sxtb16(word), acc));
    }
    return acc;
}

#if MCU_DSP_NATIVE
/* One group of the widening: LDR (unaligned-safe), 2 SXTAB16, STRD to the column, which
 * then steps `bytes` on. */
#define MCU_WIDEN_GROUP(bytes)                                \
    "ldr %[a], [%[source]], #4\n\t"                           \
    "sxtab16 %[b], %[offset], %[a], ror #8\n\t"                \
    "sxtab16 %[a], %[offset], %[a]\n\t"                        \
    "strd %[a], %[b], [%[column]], #" bytes "\n\t"

/* The widening below for columns 16, 24 or 32 bytes per group (a pair, triple, quad): four groups per
 * iteration (18 instructions per 16 values), then the rest one by one. */
#define MCU_WIDEN_ASM(bytes)                                                              \
    __asm__ volatile(                                                                     \
        "lsrs %[quads], %[groups], #2\n\t"                                                \
        "beq 2f\n\t"                                                                      \
        "1:\n\t" MCU_WIDEN_GROUP(bytes) MCU_WIDEN_GROUP(bytes) MCU_WIDEN_GROUP(bytes)       \
        MCU_WIDEN_GROUP(bytes)                                                            \
        "subs %[quads], %[quads], #1\n\t"                                                 \
        "bne 1b\n\t"                                                                      \
        "2:\n\t"                                                                          \
        "ands %[groups], %[groups], #3\n\t"                                               \
        "beq 4f\n\t"                                                                      \
        "3:\n\t" MCU_WIDEN_GROUP(bytes)                                                   \
        "subs %[groups], %[groups], #1\n\t"                                               \
        "bne 3b\n\t"                                                                      \
        "4:\n\t"                                                                          \
        : [source] "+r"(source), [column] "+r"(column), [groups] "+r"(groups), [quads] "=&r"(quads), \
          [a] "=&r"(a), [b] "=&r"(b)                                                      \
        : [offset] "r"(offset_pair)                                                       \
        : "cc", "memory")
#endif

/* q15 widening of `count` (a multiple of 4) int8 values plus the offset (both halves of
 * `offset_pair`) into column groups `stride` halfwords apart (8: one column of an
 * interleaved pair, 12: of a triple, 16: of a quad), each group stored (x0, x2, x1, x3). */
static inline void mcu_dsp_widen(const int8_t *source, int32_t count, int32_t offset_pair, int16_t *column,
                                 int32_t stride) {
#if MCU_DSP_NATIVE
    if (count > 0 && (stride == 8 || stride == 12 || stride == 16)) {
        int32_t groups = count / 4, quads, a, b;
        if (stride == 16) {
            MCU_WIDEN_ASM("32");
        } else if (stride == 12) {
            MCU_WIDEN_ASM("24");
        } else {
            MCU_WIDEN_ASM("16");
        }
        return;
    }
#endif
    for (int32_t k = 0; k < count; k += 4, column += stride) {
        int32_t word = mcu_read32(source + k);
        mcu_write32(column, mcu_sxtab16(offset_pair, word));
        mcu_write32(column + 2, mcu_sxtab16_ror8(offset_pair, word));
    }
}


/* A whole row of `depth` values (any depth): the full groups widened, the last partial group
 * completed with zeros (what the zero-padded weights meet). */
static inline void mcu_dsp_widen_row(const int8_t *source, int32_t depth, int32_t offset_pair, int16_t *column,
                                     int32_t stride) {
    int32_t whole = depth & ~3, offset = (int16_t)(uint16_t)((uint32_t)offset_pair & 0xFFFFu);
    mcu_dsp_widen(source, whole, offset_pair, column, stride);
    if (whole < depth) {
        int16_t *group = column + (whole / 4) * stride;
        int16_t values[4] = {0, 0, 0, 0};
        for (int32_t k = whole; k < depth; ++k) {
            values[k - whole] = (int16_t)(source[k] + offset);
        }
        group[0] = values[0];   /* (x0, x2, x1, x3) */
        group[1] = values[2];
        group[2] = values[1];
        group[3] = values[3];
    }
}

/* Zeros for `count` (a multiple of 4) values in column groups `stride` halfwords apart. */
static inline void mcu_dsp_zero(int16_t *column, int32_t count, int32_t stride) {
    for (int32_t k = 0; k < count; k += 4, column += stride) {
        mcu_write32(column, 0);
        mcu_write32(column + 2, 0);
    }
}

#endif /* MCU_DSP_DOT_H */
