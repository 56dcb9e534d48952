/*
 * mcu_dsp_simd.h - the Armv7E-M / Armv8-M DSP-extension instructions the _dsp kernels use,
 * one static inline function each (internal header, not part of the API).
 *
 * With __ARM_FEATURE_DSP (Cortex-M4, M7, M33, M55) each function is the instruction
 * itself (arm_acle.h, or inline assembly where ACLE has no intrinsic: SXTB16 with a
 * rotation, SMMULR, PKHBT); everywhere else (host builds, M0+ / M3) a portable C
 * definition with the same result bit for bit, so that the same kernel source runs and is
 * tested on the host. Packed values: a word holds two int16 halves, low = bits 0..15.
 *
 *   sxtb16(x)       = (sext8(x[7:0]), sext8(x[23:16]))         bytes 0 and 2 -> halves
 *   sxtb16_ror8(x)  = (sext8(x[15:8]), sext8(x[31:24]))        bytes 1 and 3 -> halves
 *   sxtab16(a, x), sxtab16_ror8(a, x) = a + sxtb16(x), a + sxtb16_ror8(x)   (halfwise, mod 2^16)
 *   smlad(a, b, c)  = c + a.lo*b.lo + a.hi*b.hi                (mod 2^32)
 *   smlabb / smlatt / smlabt / smlatb(a, b, c) = c + a.lo|hi * b.lo|hi   (mod 2^32)
 *   smmulr(a, b)    = (a*b + 2^31) >> 32                       (rounded high word)
 *   smmlar(a, b, c) = c + smmulr(a, b)                         (mod 2^32)
 *   pkhbt(a, b)     = (a.lo, b.lo);  pkhtb(a, b) = (b.hi, a.hi)
 *   sel_max8(a, b)  = bytewise signed max (SSUB8 + SEL); min8(a, b) = bytewise signed min
 *   ssat8(x)        = clamp(x, -128, 127)                      (SSAT #8)
 *   uxtb16(x)       = (zext8(x[7:0]), zext8(x[23:16]))         bytes 0 and 2 -> halves, zero-extended
 */
#ifndef MCU_DSP_SIMD_H
#define MCU_DSP_SIMD_H

#include <stdint.h>
#include <string.h>

/* Unaligned-safe loads and stores of packed words (one LDR / STR on Cortex-M). */
static inline int32_t mcu_read32(const void *address) {
    int32_t value;
    memcpy(&value, address, 4);
    return value;
}

static inline void mcu_write32(void *address, int32_t value) {
    memcpy(address, &value, 4);
}

/* (value, value) as two int16 halves. */
static inline int32_t mcu_dsp_pair(int32_t value) {
    uint32_t half = (uint16_t)(int16_t)value;
    return (int32_t)(half << 16 | half);
}

#if defined(__ARM_FEATURE_DSP) && defined(__GNUC__)
#include <arm_acle.h>

#define MCU_DSP_NATIVE 1

static inline int32_t mcu_sxtb16(int32_t x) {
    return __sxtb16(x);
}

static inline int32_t mcu_sxtb16_ror8(int32_t x) {
    int32_t result;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(result) : "r"(x));
    return result;
}

static inline int32_t mcu_smlad(int32_t a, int32_t b, int32_t c) {
    return __smlad(a, b, c);
}

static inline int32_t mcu_smlabb(int32_t a, int32_t b, int32_t c) {
    return __smlabb(a, b, c);
}

static inline int32_t mcu_smlatt(int32_t a, int32_t b, int32_t c) {
    return __smlatt(a, b, c);
}

static inline int32_t mcu_smlabt(int32_t a, int32_t b, int32_t c) {
    return __smlabt(a, b, c);
}

static inline int32_t mcu_smlatb(int32_t a, int32_t b, int32_t c) {
    return __smlatb(a, b, c);
}

static inline int32_t mcu_smmulr(int32_t a, int32_t b) {
    int32_t result;
    __asm__("smmulr %0, %1, %2" : "=r"(result) : "r"(a), "r"(b));
    return result;
}

static inline int32_t mcu_smmlar(int32_t a, int32_t b, int32_t c) {
    int32_t result;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(result) : "r"(a), "r"(b), "r"(c));
    return result;
}

static inline int32_t mcu_pkhbt(int32_t a, int32_t b) {
    int32_t result;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(result) : "r"(a), "r"(b));
    return result;
}

static inline int32_t mcu_pkhtb(int32_t a, int32_t b) {
    int32_t result;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(result) : "r"(a), "r"(b));
    return result;
}

static inline int32_t mcu_sxtab16(int32_t a, int32_t x) {
    return __sxtab16(a, x);
}

static inline int32_t mcu_sxtab16_ror8(int32_t a, int32_t x) {
    int32_t result;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(result) : "r"(a), "r"(x));
    return result;
}

static inline int32_t mcu_max8(int32_t a, int32_t b) {
    (void)__ssub8(a, b); /* sets the GE flags byte by byte: a >= b */
    return __sel(a, b);
}

static inline int32_t mcu_min8(int32_t a, int32_t b) {
    (void)__ssub8(a, b); /* GE where a >= b: take b there */
    return __sel(b, a);
}

static inline int32_t mcu_ssat8(int32_t x) {
    return __ssat(x, 8);
}

static inline int32_t mcu_uxtb16(int32_t x) {
    return (int32_t)__uxtb16((uint32_t)x);
}

#else /* portable definitions */

#define MCU_DSP_NATIVE 0

static inline int32_t mcu_half(int32_t low, int32_t high) {
    return (int32_t)(((uint32_t)high << 16) | ((uint32_t)low & 0xFFFFu));
}

static inline int32_t mcu_low(int32_t x) {
    return (int16_t)(uint16_t)((uint32_t)x & 0xFFFFu);
}

static inline int32_t mcu_high(int32_t x) {
    return (int16_t)(uint16_t)((uint32_t)x >> 16);
}

static inline int32_t mcu_byte(int32_t x, int32_t index) {
    return (int8_t)(uint8_t)((uint32_t)x >> (8 * index));
}

static inline int32_t mcu_sxtb16(int32_t x) {
    return mcu_half(mcu_byte(x, 0), mcu_byte(x, 2));
}

static inline int32_t mcu_sxtb16_ror8(int32_t x) {
    return mcu_half(mcu_byte(x, 1), mcu_byte(x, 3));
}

static inline int32_t mcu_mac(int32_t c, int32_t a, int32_t b) {
    return (int32_t)((uint32_t)c + (uint32_t)(a * b));
}

static inline int32_t mcu_smlad(int32_t a, int32_t b, int32_t c) {
    return mcu_mac(mcu_mac(c, mcu_low(a), mcu_low(b)), mcu_high(a), mcu_high(b));
}

static inline int32_t mcu_smlabb(int32_t a, int32_t b, int32_t c) {
    return mcu_mac(c, mcu_low(a), mcu_low(b));
}

static inline int32_t mcu_smlatt(int32_t a, int32_t b, int32_t c) {
    return mcu_mac(c, mcu_high(a), mcu_high(b));
}

static inline int32_t mcu_smlabt(int32_t a, int32_t b, int32_t c) {
    return mcu_mac(c, mcu_low(a), mcu_high(b));
}

static inline int32_t mcu_smlatb(int32_t a, int32_t b, int32_t c) {
    return mcu_mac(c, mcu_high(a), mcu_low(b));
}

static inline int32_t mcu_smmulr(int32_t a, int32_t b) {
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 31)) >> 32);
}

static inline int32_t mcu_smmlar(int32_t a, int32_t b, int32_t c) {
    return (int32_t)((uint32_t)c + (uint32_t)mcu_smmulr(a, b));
}

static inline int32_t mcu_pkhbt(int32_t a, int32_t b) {
    return mcu_half(mcu_low(a), mcu_low(b));
}

static inline int32_t mcu_pkhtb(int32_t a, int32_t b) {
    return mcu_half(mcu_high(b), mcu_high(a));
}

static inline int32_t mcu_sxtab16(int32_t a, int32_t x) {
    return mcu_half(mcu_low(a) + mcu_byte(x, 0), mcu_high(a) + mcu_byte(x, 2));
}

static inline int32_t mcu_sxtab16_ror8(int32_t a, int32_t x) {
    return mcu_half(mcu_low(a) + mcu_byte(x, 1), mcu_high(a) + mcu_byte(x, 3));
}

static inline int32_t mcu_max8(int32_t a, int32_t b) {
    uint32_t result = 0;
    for (int32_t index = 0; index < 4; ++index) {
        int32_t x = mcu_byte(a, index), y = mcu_byte(b, index);
        result |= (uint32_t)(uint8_t)(int8_t)(x > y ? x : y) << (8 * index);
    }
    return (int32_t)result;
}

static inline int32_t mcu_min8(int32_t a, int32_t b) {
    uint32_t result = 0;
    for (int32_t index = 0; index < 4; ++index) {
        int32_t x = mcu_byte(a, index), y = mcu_byte(b, index);
        result |= (uint32_t)(uint8_t)(int8_t)(x >= y ? y : x) << (8 * index);
    }
    return (int32_t)result;
}

static inline int32_t mcu_ssat8(int32_t x) {
    return x < -128 ? -128 : (x > 127 ? 127 : x);
}

static inline int32_t mcu_uxtb16(int32_t x) {
    return (int32_t)((uint32_t)x & 0x00FF00FFu);
}

#endif

#endif /* MCU_DSP_SIMD_H */
