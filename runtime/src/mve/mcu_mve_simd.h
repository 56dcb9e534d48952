/*
 * mcu_mve_simd.h - the Arm M-profile Vector Extension (MVE, "Helium") instructions the _mve
 * kernels use, one static inline function each (internal header, not part of the API).
 *
 * With __ARM_FEATURE_MVE (Cortex-M55, M85) each function is the arm_mve.h intrinsic of one
 * instruction; everywhere else (host builds, cores without MVE) a portable C definition
 * lane by lane with the same result bit for bit, so the same kernel source runs and is
 * tested on the host. Vectors are 128 bits: 16 x int8, 8 x int16 or 4 x int32; a predicate
 * has one bit per byte lane (vctp: the first n lanes).
 *
 *   mladava_s8(acc, a, b) = acc + sum_i a[i]*b[i]            (VMLADAVA.S8, mod 2^32)
 *   qrdmulh_s32(a, b)     = sat((2*a*b + 2^31) >> 32)        (VQRDMULH: gemmlowp srdhm)
 *   rshl_s32(a, n)        = n >= 0 ? a << n : (a + 2^(-n-1)) >> -n   (VRSHL, exact rounding)
 *   shl_s32(a, n)         = n >= 0 ? a << n : a >> -n        (VSHL, wraps)
 *   mullb / mullt_s16     = products of the even / odd int16 lanes as int32 (VMULLB / VMULLT)
 *   qmovn_pair_s32        = int32 even / odd lanes narrowed to int16 with saturation (VQMOVNB / VQMOVNT)
 */
#ifndef MCU_MVE_SIMD_H
#define MCU_MVE_SIMD_H

#include <stdint.h>

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#include <arm_mve.h>

#define MCU_MVE_NATIVE 1

typedef int8x16_t mcu_s8x16;
typedef int16x8_t mcu_s16x8;
typedef int32x4_t mcu_s32x4;
typedef mve_pred16_t mcu_pred;

static inline mcu_pred mcu_vctp8(int32_t n) { return vctp8q((uint32_t)n); }
static inline mcu_pred mcu_vctp16(int32_t n) { return vctp16q((uint32_t)n); }
static inline mcu_pred mcu_vctp32(int32_t n) { return vctp32q((uint32_t)n); }
static inline mcu_s8x16 mcu_vld_s8(const int8_t *p) { return vldrbq_s8(p); }
static inline mcu_s8x16 mcu_vld_s8_z(const int8_t *p, mcu_pred pred) { return vldrbq_z_s8(p, pred); }
static inline void mcu_vst_s8(int8_t *p, mcu_s8x16 v) { vstrbq_s8(p, v); }
static inline void mcu_vst_s8_p(int8_t *p, mcu_s8x16 v, mcu_pred pred) { vstrbq_p_s8(p, v, pred); }
static inline mcu_s8x16 mcu_vdup_s8(int32_t x) { return vdupq_n_s8((int8_t)x); }
static inline mcu_s8x16 mcu_vmax_s8(mcu_s8x16 a, mcu_s8x16 b) { return vmaxq_s8(a, b); }
static inline mcu_s8x16 mcu_vmin_s8(mcu_s8x16 a, mcu_s8x16 b) { return vminq_s8(a, b); }
static inline int32_t mcu_vmladava_s8(int32_t acc, mcu_s8x16 a, mcu_s8x16 b) { return vmladavaq_s8(acc, a, b); }

static inline mcu_s16x8 mcu_vld_s8_s16(const int8_t *p) { return vldrbq_s16(p); }
static inline mcu_s16x8 mcu_vld_s8_s16_z(const int8_t *p, mcu_pred pred) { return vldrbq_z_s16(p, pred); }
static inline mcu_s16x8 mcu_vdup_s16(int32_t x) { return vdupq_n_s16((int16_t)x); }
static inline mcu_s16x8 mcu_vadd_s16(mcu_s16x8 a, mcu_s16x8 b) { return vaddq_s16(a, b); }
static inline mcu_s32x4 mcu_vmullb_s16(mcu_s16x8 a, mcu_s16x8 b) { return vmullbq_int_s16(a, b); }
static inline mcu_s32x4 mcu_vmullt_s16(mcu_s16x8 a, mcu_s16x8 b) { return vmulltq_int_s16(a, b); }
static inline mcu_s32x4 mcu_vmovlb_s16(mcu_s16x8 a) { return vmovlbq_s16(a); }
static inline mcu_s32x4 mcu_vmovlt_s16(mcu_s16x8 a) { return vmovltq_s16(a); }
/* Narrow: the even lanes from `even`, the odd lanes from `odd` (VMOVNB then VMOVNT). */
static inline mcu_s16x8 mcu_vmovn_pair_s32(mcu_s32x4 even, mcu_s32x4 odd) {
    return vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), even), odd);
}
/* Saturating narrow: even lanes sat16(even), odd lanes sat16(odd) (VQMOVNB then VQMOVNT). */
static inline mcu_s16x8 mcu_vqmovn_pair_s32(mcu_s32x4 even, mcu_s32x4 odd) {
    return vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), even), odd);
}
static inline mcu_s16x8 mcu_vqadd_n_s16(mcu_s16x8 a, int32_t b) { return vqaddq_n_s16(a, (int16_t)b); }
static inline mcu_s16x8 mcu_vmax_s16(mcu_s16x8 a, mcu_s16x8 b) { return vmaxq_s16(a, b); }
static inline mcu_s16x8 mcu_vmin_s16(mcu_s16x8 a, mcu_s16x8 b) { return vminq_s16(a, b); }
static inline void mcu_vst_s16_as_s8(int8_t *p, mcu_s16x8 v) { vstrbq_s16(p, v); }
static inline void mcu_vst_s16_as_s8_p(int8_t *p, mcu_s16x8 v, mcu_pred pred) { vstrbq_p_s16(p, v, pred); }

static inline mcu_s32x4 mcu_vld_s32(const int32_t *p) { return vldrwq_s32(p); }
static inline mcu_s32x4 mcu_vld_s32_z(const int32_t *p, mcu_pred pred) { return vldrwq_z_s32(p, pred); }
static inline mcu_s32x4 mcu_vld_s8_s32(const int8_t *p) { return vldrbq_s32(p); }
static inline mcu_s32x4 mcu_vld_s8_s32_z(const int8_t *p, mcu_pred pred) { return vldrbq_z_s32(p, pred); }
static inline mcu_s32x4 mcu_vdup_s32(int32_t x) { return vdupq_n_s32(x); }
static inline mcu_s32x4 mcu_vset4_s32(int32_t a, int32_t b, int32_t c, int32_t d) {
    mcu_s32x4 v = vdupq_n_s32(a);
    v = vsetq_lane_s32(b, v, 1);
    v = vsetq_lane_s32(c, v, 2);
    return vsetq_lane_s32(d, v, 3);
}
static inline int32_t mcu_vlane_s32(mcu_s32x4 v, int32_t lane) {
    switch (lane) {
    case 0: return vgetq_lane_s32(v, 0);
    case 1: return vgetq_lane_s32(v, 1);
    case 2: return vgetq_lane_s32(v, 2);
    default: return vgetq_lane_s32(v, 3);
    }
}
static inline mcu_s32x4 mcu_vadd_s32(mcu_s32x4 a, mcu_s32x4 b) { return vaddq_s32(a, b); }
static inline mcu_s32x4 mcu_vadd_n_s32(mcu_s32x4 a, int32_t b) { return vaddq_n_s32(a, b); }
static inline mcu_s32x4 mcu_vmul_s32(mcu_s32x4 a, mcu_s32x4 b) { return vmulq_s32(a, b); }
static inline mcu_s32x4 mcu_vmax_s32(mcu_s32x4 a, mcu_s32x4 b) { return vmaxq_s32(a, b); }
static inline mcu_s32x4 mcu_vmin_s32(mcu_s32x4 a, mcu_s32x4 b) { return vminq_s32(a, b); }
static inline mcu_s32x4 mcu_vand_s32(mcu_s32x4 a, mcu_s32x4 b) { return vandq_s32(a, b); }
static inline mcu_s32x4 mcu_vqadd_s32(mcu_s32x4 a, mcu_s32x4 b) { return vqaddq_s32(a, b); }
static inline mcu_s32x4 mcu_vqadd_n_s32(mcu_s32x4 a, int32_t b) { return vqaddq_n_s32(a, b); }
static inline mcu_s32x4 mcu_vsign_s32(mcu_s32x4 a) { return vshrq_n_s32(a, 31); }
static inline mcu_s32x4 mcu_vshl_s32(mcu_s32x4 a, mcu_s32x4 n) { return vshlq_s32(a, n); }
static inline mcu_s32x4 mcu_vshl_r_s32(mcu_s32x4 a, int32_t n) { return vshlq_r_s32(a, n); }
static inline mcu_s32x4 mcu_vrshl_s32(mcu_s32x4 a, mcu_s32x4 n) { return vrshlq_s32(a, n); }
static inline mcu_s32x4 mcu_vrshl_r_s32(mcu_s32x4 a, int32_t n) { return vrshlq_n_s32(a, n); }
static inline mcu_s32x4 mcu_vqrdmulh_s32(mcu_s32x4 a, mcu_s32x4 b) { return vqrdmulhq_s32(a, b); }
static inline mcu_s32x4 mcu_vqrdmulh_n_s32(mcu_s32x4 a, int32_t b) { return vqrdmulhq_n_s32(a, b); }
static inline mcu_s32x4 mcu_vqdmulh_n_s32(mcu_s32x4 a, int32_t b) { return vqdmulhq_n_s32(a, b); }
static inline void mcu_vst_s32_as_s8(int8_t *p, mcu_s32x4 v) { vstrbq_s32(p, v); }
static inline void mcu_vst_s32_as_s8_p(int8_t *p, mcu_s32x4 v, mcu_pred pred) { vstrbq_p_s32(p, v, pred); }
/* 8 consecutive int32: lanes 0, 2, 4, 6 -> even; 1, 3, 5, 7 -> odd (VLD20 / VLD21). */
static inline void mcu_vld2_s32(const int32_t *p, mcu_s32x4 *even, mcu_s32x4 *odd) {
    int32x4x2_t pair = vld2q_s32(p);
    *even = pair.val[0];
    *odd = pair.val[1];
}

#else /* portable definitions, lane by lane */

#define MCU_MVE_NATIVE 0

typedef struct { int8_t lane[16]; } mcu_s8x16;
typedef struct { int16_t lane[8]; } mcu_s16x8;
typedef struct { int32_t lane[4]; } mcu_s32x4;
typedef uint32_t mcu_pred; /* bit i: byte lane i active */

static inline mcu_pred mcu_vctp_bytes(int32_t n, int32_t lane_bytes, int32_t lanes) {
    mcu_pred pred = 0;
    for (int32_t lane = 0; lane < lanes && lane < n; ++lane) {
        pred |= ((1u << lane_bytes) - 1u) << (lane * lane_bytes);
    }
    return pred;
}
static inline mcu_pred mcu_vctp8(int32_t n) { return mcu_vctp_bytes(n, 1, 16); }
static inline mcu_pred mcu_vctp16(int32_t n) { return mcu_vctp_bytes(n, 2, 8); }
static inline mcu_pred mcu_vctp32(int32_t n) { return mcu_vctp_bytes(n, 4, 4); }
static inline int32_t mcu_active(mcu_pred pred, int32_t lane, int32_t lane_bytes) {
    return (pred >> (lane * lane_bytes)) & 1u;
}

static inline mcu_s8x16 mcu_vld_s8_z(const int8_t *p, mcu_pred pred) {
    mcu_s8x16 v;
    for (int32_t i = 0; i < 16; ++i) {
        v.lane[i] = mcu_active(pred, i, 1) ? p[i] : 0;
    }
    return v;
}
static inline mcu_s8x16 mcu_vld_s8(const int8_t *p) { return mcu_vld_s8_z(p, 0xFFFFu); }
static inline void mcu_vst_s8_p(int8_t *p, mcu_s8x16 v, mcu_pred pred) {
    for (int32_t i = 0; i < 16; ++i) {
        if (mcu_active(pred, i, 1)) {
            p[i] = v.lane[i];
        }
    }
}
static inline void mcu_vst_s8(int8_t *p, mcu_s8x16 v) { mcu_vst_s8_p(p, v, 0xFFFFu); }
static inline mcu_s8x16 mcu_vdup_s8(int32_t x) {
    mcu_s8x16 v;
    for (int32_t i = 0; i < 16; ++i) {
        v.lane[i] = (int8_t)x;
    }
    return v;
}
static inline mcu_s8x16 mcu_vmax_s8(mcu_s8x16 a, mcu_s8x16 b) {
    for (int32_t i = 0; i < 16; ++i) {
        a.lane[i] = a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i];
    }
    return a;
}
static inline mcu_s8x16 mcu_vmin_s8(mcu_s8x16 a, mcu_s8x16 b) {
    for (int32_t i = 0; i < 16; ++i) {
        a.lane[i] = a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i];
    }
    return a;
}
static inline int32_t mcu_vmladava_s8(int32_t acc, mcu_s8x16 a, mcu_s8x16 b) {
    uint32_t total = (uint32_t)acc;
    for (int32_t i = 0; i < 16; ++i) {
        total += (uint32_t)(a.lane[i] * b.lane[i]);
    }
    return (int32_t)total;
}

static inline mcu_s16x8 mcu_vld_s8_s16_z(const int8_t *p, mcu_pred pred) {
    mcu_s16x8 v;
    for (int32_t i = 0; i < 8; ++i) {
        v.lane[i] = mcu_active(pred, i, 2) ? p[i] : 0;
    }
    return v;
}
static inline mcu_s16x8 mcu_vld_s8_s16(const int8_t *p) { return mcu_vld_s8_s16_z(p, 0xFFFFu); }
static inline mcu_s16x8 mcu_vdup_s16(int32_t x) {
    mcu_s16x8 v;
    for (int32_t i = 0; i < 8; ++i) {
        v.lane[i] = (int16_t)x;
    }
    return v;
}
static inline mcu_s16x8 mcu_vadd_s16(mcu_s16x8 a, mcu_s16x8 b) {
    for (int32_t i = 0; i < 8; ++i) {
        a.lane[i] = (int16_t)(uint16_t)((uint32_t)a.lane[i] + (uint32_t)b.lane[i]);
    }
    return a;
}
static inline mcu_s32x4 mcu_vmull_s16(mcu_s16x8 a, mcu_s16x8 b, int32_t top) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = a.lane[2 * i + top] * b.lane[2 * i + top];
    }
    return v;
}
static inline mcu_s32x4 mcu_vmullb_s16(mcu_s16x8 a, mcu_s16x8 b) { return mcu_vmull_s16(a, b, 0); }
static inline mcu_s32x4 mcu_vmullt_s16(mcu_s16x8 a, mcu_s16x8 b) { return mcu_vmull_s16(a, b, 1); }
static inline mcu_s32x4 mcu_vmovl_s16(mcu_s16x8 a, int32_t top) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = a.lane[2 * i + top];
    }
    return v;
}
static inline mcu_s32x4 mcu_vmovlb_s16(mcu_s16x8 a) { return mcu_vmovl_s16(a, 0); }
static inline mcu_s32x4 mcu_vmovlt_s16(mcu_s16x8 a) { return mcu_vmovl_s16(a, 1); }
static inline mcu_s16x8 mcu_vmovn_pair_s32(mcu_s32x4 even, mcu_s32x4 odd) {
    mcu_s16x8 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[2 * i] = (int16_t)(uint16_t)(uint32_t)even.lane[i];
        v.lane[2 * i + 1] = (int16_t)(uint16_t)(uint32_t)odd.lane[i];
    }
    return v;
}
static inline int16_t mcu_saturate16(int32_t x) {
    return (int16_t)(x > INT16_MAX ? INT16_MAX : (x < INT16_MIN ? INT16_MIN : x));
}
static inline mcu_s16x8 mcu_vqmovn_pair_s32(mcu_s32x4 even, mcu_s32x4 odd) {
    mcu_s16x8 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[2 * i] = mcu_saturate16(even.lane[i]);
        v.lane[2 * i + 1] = mcu_saturate16(odd.lane[i]);
    }
    return v;
}
static inline mcu_s16x8 mcu_vqadd_n_s16(mcu_s16x8 a, int32_t b) {
    for (int32_t i = 0; i < 8; ++i) {
        a.lane[i] = mcu_saturate16(a.lane[i] + (int16_t)b);
    }
    return a;
}
static inline mcu_s16x8 mcu_vmax_s16(mcu_s16x8 a, mcu_s16x8 b) {
    for (int32_t i = 0; i < 8; ++i) {
        a.lane[i] = a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i];
    }
    return a;
}
static inline mcu_s16x8 mcu_vmin_s16(mcu_s16x8 a, mcu_s16x8 b) {
    for (int32_t i = 0; i < 8; ++i) {
        a.lane[i] = a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i];
    }
    return a;
}
static inline void mcu_vst_s16_as_s8_p(int8_t *p, mcu_s16x8 v, mcu_pred pred) {
    for (int32_t i = 0; i < 8; ++i) {
        if (mcu_active(pred, i, 2)) {
            p[i] = (int8_t)(uint8_t)(uint16_t)v.lane[i];
        }
    }
}
static inline void mcu_vst_s16_as_s8(int8_t *p, mcu_s16x8 v) { mcu_vst_s16_as_s8_p(p, v, 0xFFFFu); }

static inline mcu_s32x4 mcu_vld_s32_z(const int32_t *p, mcu_pred pred) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = mcu_active(pred, i, 4) ? p[i] : 0;
    }
    return v;
}
static inline mcu_s32x4 mcu_vld_s32(const int32_t *p) { return mcu_vld_s32_z(p, 0xFFFFu); }
static inline mcu_s32x4 mcu_vld_s8_s32(const int8_t *p) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = p[i];
    }
    return v;
}
static inline mcu_s32x4 mcu_vld_s8_s32_z(const int8_t *p, mcu_pred pred) {
    mcu_s32x4 v;
    for (int32_t i = 0; i < 4; ++i) {
        v.lane[i] = mcu_active(pred, i, 4) ? p[i] : 0;
    }
    return v;
}
static inline mcu_s32x4 mcu_vset4_s32(int32_t a, int32_t b, int32_t c, int32_t d) {
    mcu_s32x4 v = {{a, b, c, d}};
    return v;
}
static inline mcu_s32x4 mcu_vdup_s32(int32_t x) { return mcu_vset4_s32(x, x, x, x); }
static inline int32_t mcu_vlane_s32(mcu_s32x4 v, int32_t lane) { return v.lane[lane]; }
#define MCU_MVE_LANES(expression)            \
    do {                                     \
        for (int32_t i = 0; i < 4; ++i) {    \
            a.lane[i] = (expression);        \
        }                                    \
        return a;                            \
    } while (0)
static inline mcu_s32x4 mcu_vadd_s32(mcu_s32x4 a, mcu_s32x4 b) {
    MCU_MVE_LANES((int32_t)((uint32_t)a.lane[i] + (uint32_t)b.lane[i]));
}
static inline mcu_s32x4 mcu_vadd_n_s32(mcu_s32x4 a, int32_t b) {
    MCU_MVE_LANES((int32_t)((uint32_t)a.lane[i] + (uint32_t)b));
}
static inline mcu_s32x4 mcu_vmul_s32(mcu_s32x4 a, mcu_s32x4 b) {
    MCU_MVE_LANES((int32_t)((uint32_t)a.lane[i] * (uint32_t)b.lane[i]));
}
static inline mcu_s32x4 mcu_vmax_s32(mcu_s32x4 a, mcu_s32x4 b) { MCU_MVE_LANES(a.lane[i] > b.lane[i] ? a.lane[i] : b.lane[i]); }
static inline mcu_s32x4 mcu_vmin_s32(mcu_s32x4 a, mcu_s32x4 b) { MCU_MVE_LANES(a.lane[i] < b.lane[i] ? a.lane[i] : b.lane[i]); }
static inline mcu_s32x4 mcu_vand_s32(mcu_s32x4 a, mcu_s32x4 b) { MCU_MVE_LANES(a.lane[i] & b.lane[i]); }
static inline int32_t mcu_saturate32(int64_t x) {
    return x > INT32_MAX ? INT32_MAX : (x < INT32_MIN ? INT32_MIN : (int32_t)x);
}
static inline mcu_s32x4 mcu_vqadd_s32(mcu_s32x4 a, mcu_s32x4 b) {
    MCU_MVE_LANES(mcu_saturate32((int64_t)a.lane[i] + b.lane[i]));
}
static inline mcu_s32x4 mcu_vqadd_n_s32(mcu_s32x4 a, int32_t b) {
    MCU_MVE_LANES(mcu_saturate32((int64_t)a.lane[i] + b));
}
static inline mcu_s32x4 mcu_vsign_s32(mcu_s32x4 a) { MCU_MVE_LANES(a.lane[i] < 0 ? -1 : 0); }
static inline int32_t mcu_shift_lane(int32_t a, int32_t n, int32_t rounding) {
    if (n >= 0) {
        return n > 31 ? 0 : (int32_t)((uint32_t)a << n);
    }
    int32_t right = -n > 32 ? 32 : -n;
    int64_t value = (int64_t)a + (rounding ? ((int64_t)1 << (right - 1)) : 0);
    return (int32_t)(value >> right);
}
static inline mcu_s32x4 mcu_vshl_s32(mcu_s32x4 a, mcu_s32x4 n) { MCU_MVE_LANES(mcu_shift_lane(a.lane[i], n.lane[i], 0)); }
static inline mcu_s32x4 mcu_vshl_r_s32(mcu_s32x4 a, int32_t n) { MCU_MVE_LANES(mcu_shift_lane(a.lane[i], n, 0)); }
static inline mcu_s32x4 mcu_vrshl_s32(mcu_s32x4 a, mcu_s32x4 n) { MCU_MVE_LANES(mcu_shift_lane(a.lane[i], n.lane[i], 1)); }
static inline mcu_s32x4 mcu_vrshl_r_s32(mcu_s32x4 a, int32_t n) { MCU_MVE_LANES(mcu_shift_lane(a.lane[i], n, 1)); }
static inline int32_t mcu_qrdmulh_lane(int32_t a, int32_t b) {
    return mcu_saturate32(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);   /* = (2ab + 2^31) >> 32 */
}
static inline mcu_s32x4 mcu_vqrdmulh_s32(mcu_s32x4 a, mcu_s32x4 b) { MCU_MVE_LANES(mcu_qrdmulh_lane(a.lane[i], b.lane[i])); }
static inline mcu_s32x4 mcu_vqrdmulh_n_s32(mcu_s32x4 a, int32_t b) { MCU_MVE_LANES(mcu_qrdmulh_lane(a.lane[i], b)); }
static inline int32_t mcu_qdmulh_lane(int32_t a, int32_t b) {
    return mcu_saturate32(((int64_t)a * b) >> 31);   /* = (2ab) >> 32 */
}
static inline mcu_s32x4 mcu_vqdmulh_n_s32(mcu_s32x4 a, int32_t b) { MCU_MVE_LANES(mcu_qdmulh_lane(a.lane[i], b)); }
static inline void mcu_vst_s32_as_s8_p(int8_t *p, mcu_s32x4 v, mcu_pred pred) {
    for (int32_t i = 0; i < 4; ++i) {
        if (mcu_active(pred, i, 4)) {
            p[i] = (int8_t)(uint8_t)(uint32_t)v.lane[i];
        }
    }
}
static inline void mcu_vst_s32_as_s8(int8_t *p, mcu_s32x4 v) { mcu_vst_s32_as_s8_p(p, v, 0xFFFFu); }
static inline void mcu_vld2_s32(const int32_t *p, mcu_s32x4 *even, mcu_s32x4 *odd) {
    for (int32_t i = 0; i < 4; ++i) {
        even->lane[i] = p[2 * i];
        odd->lane[i] = p[2 * i + 1];
    }
}

#endif

#endif /* MCU_MVE_SIMD_H */
