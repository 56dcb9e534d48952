/*
 * fully_connected_dsp.c - mcu_fully_connected_s8_dsp: int8 fully connected layer for cores
 * with the DSP extension.
 *
 *   acc[r, u] = bias[u] + sum_k W[u, k] * (X[r, k] + input_offset)       (weights_offset 0)
 *   Y[r, u]   = clamp(mbqm(acc, multiplier[u], shift[u]) + output_offset)
 *
 * One input row at a time, read in place, against blocks of four units ("quad rows",
 * mcu_runtime_dsp.h): per four k one LDR of inputs widened with the input offset by
 * SXTAB16 / SXTAB16 ROR 8 (the (x0, x2) (x1, x3) halves that meet SXTB16 of a weight word),
 * shared by the four units; two LDRD of weights, 8 SXTB16, 8 SMLAD: 23 instructions for 16
 * MACs (hand-scheduled loop). The last N mod 4 units: a pair (1 x 2 units, 4 SMLAD per four
 * k: 13 instructions for 8 MACs, two steps per turn) and an odd unit (10 for 4),
 * hand-scheduled loops too. Requantization (store_units, one helper for both forms): when
 * every unit is "simple" (mcu_dsp_all_simple) the short SMMULR form without per-unit tests,
 * else each unit decides its form. No scratch (a q15 copy of the row would cost 2 * K bytes
 * of RAM and save nothing on the weights' unpacking).
 *
 * Entry points: mcu_fully_connected_s8_dsp checks its arguments (MCU_ERR_ARG), then runs
 * _prechecked, which tests "every unit simple" once per call; _simple takes that as given.
 * mcudeploy's generated code calls _simple or _prechecked, as the code generator decided
 * from the same tests (kernels/dsp.py: fc_function_suffix): a 16 x 2 layer would otherwise
 * spend about half its instructions on checks.
 * Per-tensor weights with a non-zero zero point (weights_offset != 0) are refused
 * (MCU_ERR_ARG): mcudeploy keeps those on the reference kernel.
 *
 * Access order: a row's outputs are stored while its input row is still being read (no
 * overlap is claimed for this kernel).
 */
#include "mcu_dsp_internal.h"
#include "mcu_runtime_dsp.h"

#if MCU_DSP_NATIVE
/* acc[0..3] += four groups-worth of k: groups (>= 1) steps of 4 k, quad-interleaved weights. */
static void quad_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[4]) {
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t x02, x13, wa, wb, t;
    __asm__ volatile(
        "1:\n\t"
        "ldr %[x13], [%[x]], #4\n\t"
        "ldrd %[wa], %[wb], [%[w]], #8\n\t"
        "sxtab16 %[x02], %[off], %[x13]\n\t"
        "sxtab16 %[x13], %[off], %[x13], ror #8\n\t"
        "sxtb16 %[t], %[wa]\n\t"
        "sxtb16 %[wa], %[wa], ror #8\n\t"
        "smlad %[a0], %[x02], %[t], %[a0]\n\t"
        "smlad %[a0], %[x13], %[wa], %[a0]\n\t"
        "sxtb16 %[t], %[wb]\n\t"
        "sxtb16 %[wb], %[wb], ror #8\n\t"
        "smlad %[a1], %[x02], %[t], %[a1]\n\t"
        "smlad %[a1], %[x13], %[wb], %[a1]\n\t"
        "ldrd %[wa], %[wb], [%[w]], #8\n\t"
        "sxtb16 %[t], %[wa]\n\t"
        "sxtb16 %[wa], %[wa], ror #8\n\t"
        "smlad %[a2], %[x02], %[t], %[a2]\n\t"
        "smlad %[a2], %[x13], %[wa], %[a2]\n\t"
        "sxtb16 %[t], %[wb]\n\t"
        "sxtb16 %[wb], %[wb], ror #8\n\t"
        "smlad %[a3], %[x02], %[t], %[a3]\n\t"
        "smlad %[a3], %[x13], %[wb], %[a3]\n\t"
        "subs %[groups], %[groups], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w),
          [groups] "+r"(groups), [x02] "=&r"(x02), [x13] "=&r"(x13), [wa] "=&r"(wa), [wb] "=&r"(wb),
          [t] "=&r"(t)
        : [off] "r"(offset_pair)
        : "cc", "memory");
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/* One step of 4 k against a pair block (4 weights of each unit): 12 instructions for 8 MACs. */
#define MCU_FC_PAIR_STEP                                   \
    "ldr %[x13], [%[x]], #4\n\t"                          \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                   \
    "sxtab16 %[x02], %[off], %[x13]\n\t"                  \
    "sxtab16 %[x13], %[off], %[x13], ror #8\n\t"          \
    "sxtb16 %[t], %[wa]\n\t"                              \
    "sxtb16 %[wa], %[wa], ror #8\n\t"                     \
    "smlad %[a0], %[x02], %[t], %[a0]\n\t"                \
    "smlad %[a0], %[x13], %[wa], %[a0]\n\t"               \
    "sxtb16 %[t], %[wb]\n\t"                              \
    "sxtb16 %[wb], %[wb], ror #8\n\t"                     \
    "smlad %[a1], %[x02], %[t], %[a1]\n\t"                \
    "smlad %[a1], %[x13], %[wb], %[a1]\n\t"

/* acc[0..1] += groups (>= 1) steps of 4 k against a pair block, two steps per loop turn. */
static void pair_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[2]) {
    int32_t a0 = acc[0], a1 = acc[1], turns = groups >> 1;
    int32_t x02, x13, wa, wb, t;
    if (turns > 0) {
        __asm__ volatile(
            "1:\n\t" MCU_FC_PAIR_STEP MCU_FC_PAIR_STEP
            "subs %[turns], %[turns], #1\n\t"
            "bne 1b\n\t"
            : [a0] "+r"(a0), [a1] "+r"(a1), [x] "+r"(x), [w] "+r"(w), [turns] "+r"(turns), [x02] "=&r"(x02),
              [x13] "=&r"(x13), [wa] "=&r"(wa), [wb] "=&r"(wb), [t] "=&r"(t)
            : [off] "r"(offset_pair)
            : "cc", "memory");
    }
    if (groups & 1) {
        __asm__ volatile(MCU_FC_PAIR_STEP
                         : [a0] "+r"(a0), [a1] "+r"(a1), [x] "+r"(x), [w] "+r"(w), [x02] "=&r"(x02),
                           [x13] "=&r"(x13), [wa] "=&r"(wa), [wb] "=&r"(wb), [t] "=&r"(t)
                         : [off] "r"(offset_pair)
                         : "memory");
    }
    acc[0] = a0;
    acc[1] = a1;
}

/* acc[0] += groups (>= 1) steps of 4 k of one unit. */
static void single_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[1]) {
    int32_t a0 = acc[0];
    int32_t x02, x13, wa, t;
    __asm__ volatile(
        "1:\n\t"
        "ldr %[x13], [%[x]], #4\n\t"
        "ldr %[wa], [%[w]], #4\n\t"
        "sxtab16 %[x02], %[off], %[x13]\n\t"
        "sxtab16 %[x13], %[off], %[x13], ror #8\n\t"
        "sxtb16 %[t], %[wa]\n\t"
        "sxtb16 %[wa], %[wa], ror #8\n\t"
        "smlad %[a0], %[x02], %[t], %[a0]\n\t"
        "smlad %[a0], %[x13], %[wa], %[a0]\n\t"
        "subs %[groups], %[groups], #1\n\t"
        "bne 1b\n\t"
        : [a0] "+r"(a0), [x] "+r"(x), [w] "+r"(w), [groups] "+r"(groups), [x02] "=&r"(x02), [x13] "=&r"(x13),
          [wa] "=&r"(wa), [t] "=&r"(t)
        : [off] "r"(offset_pair)
        : "cc", "memory");
    acc[0] = a0;
}
#else
static void quad_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[4]) {
    for (; groups > 0; --groups, x += 4, w += 16) {
        int32_t in = mcu_read32(x);
        int32_t x02 = mcu_sxtab16(offset_pair, in), x13 = mcu_sxtab16_ror8(offset_pair, in);
        for (int32_t r = 0; r < 4; ++r) {
            int32_t word = mcu_read32(w + 4 * r);
            acc[r] = mcu_smlad(x13, mcu_sxtb16_ror8(word), mcu_smlad(x02, mcu_sxtb16(word), acc[r]));
        }
    }
}

/* units (1 or 2) rows of a block, groups steps of 4 k (the portable form of pair / single_steps). */
static void narrow_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t units,
                         int32_t *acc) {
    for (; groups > 0; --groups, x += 4, w += 4 * units) {
        int32_t in = mcu_read32(x);
        int32_t x02 = mcu_sxtab16(offset_pair, in), x13 = mcu_sxtab16_ror8(offset_pair, in);
        for (int32_t r = 0; r < units; ++r) {
            int32_t word = mcu_read32(w + 4 * r);
            acc[r] = mcu_smlad(x13, mcu_sxtb16_ror8(word), mcu_smlad(x02, mcu_sxtb16(word), acc[r]));
        }
    }
}

static void pair_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[2]) {
    narrow_steps(x, w, groups, offset_pair, 2, acc);
}

static void single_steps(const int8_t *x, const int8_t *w, int32_t groups, int32_t offset_pair, int32_t acc[1]) {
    narrow_steps(x, w, groups, offset_pair, 1, acc);
}
#endif

/* What every block of one call shares. */
typedef struct {
    const mcu_fc_quant *quant;
    const int32_t *bias;
    int32_t depth, row;                 /* K, Kp */
    int32_t offset_pair, reach;
    int32_t low, high;                  /* the activation bounds */
} fc_call;

/* acc[0..units-1] += one input row x a block of `units` (1, 2 or 4) interleaved weight rows
 * (a group of four k per row is 4 * units bytes; the last, zero-padded group by bytes). */
MCU_DSP_INLINE void block_dot(const int8_t *x, const fc_call *call, const int8_t *w, int32_t units, int32_t *acc) {
    int32_t depth = call->depth, whole = depth & ~3, groups = depth >> 2;
    if (groups > 0) {
        if (units == 4) {
            quad_steps(x, w, groups, call->offset_pair, acc);
        } else if (units == 2) {
            pair_steps(x, w, groups, call->offset_pair, acc);
        } else {
            single_steps(x, w, groups, call->offset_pair, acc);
        }
    }
    if (whole < depth) {   /* the zero-padded last group */
        const int8_t *last = w + groups * 4 * units;
        int32_t input_offset = call->quant->input_offset;
        for (int32_t k = whole; k < depth; ++k) {
            int32_t value = x[k] + input_offset;
            for (int32_t i = 0; i < units; ++i) {
                acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)(last[4 * i + k - whole] * value));
            }
        }
    }
}

int32_t mcu_fully_connected_s8_dsp_scratch_size(const mcu_fc_params *params, const mcu_dims *in_dims,
                                                const mcu_dims *w_dims, const mcu_dims *out_dims) {
    (void)params;
    (void)in_dims;
    (void)w_dims;
    (void)out_dims;
    return 0;
}

/* out[u..u+count-1] from their accumulators: simple units (mcu_dsp_all_simple) by the
 * 6-instruction SMMULR form, the others each by its own form (wide: TFLite's). */
MCU_DSP_INLINE void store_units(const int32_t *acc, int32_t u, int32_t count, int32_t simple, const fc_call *call,
                                int8_t *out) {
    const int32_t *multiplier = call->quant->multiplier + u, *shift = call->quant->shift + u;
    int32_t offset = call->quant->output_offset;
    for (int32_t i = 0; i < count; ++i) {
        if (simple) {
            mcu_dsp_scale scale = mcu_dsp_simple_scale_of(multiplier[i], shift[i]);
            out[u + i] = mcu_dsp_output(acc[i], &scale, offset, call->low, call->high);
        } else {
            mcu_dsp_scale scale = mcu_dsp_scale_of(multiplier[i], shift[i], call->bias != NULL ? call->bias[u + i] : 0,
                                                   call->reach);
            out[u + i] = mcu_dsp_output_any(acc[i], &scale, offset, call->low, call->high);
        }
    }
}

/* The `count` (1, 2 or 4) units from u of one input row. */
MCU_DSP_INLINE void block(const fc_call *call, const int8_t *in, const int8_t *w, int32_t u, int32_t count,
                          int32_t simple, int8_t *out) {
    int32_t acc[4];
    for (int32_t i = 0; i < count; ++i) {
        acc[i] = call->bias != NULL ? call->bias[u + i] : 0;
    }
    block_dot(in, call, w + u * call->row, count, acc);
    store_units(acc, u, count, simple, call, out);
}

/* One input row: blocks of four units, then a pair and an odd unit. */
MCU_DSP_INLINE void fc_row(const fc_call *call, const int8_t *in, const int8_t *w, int32_t units, int32_t simple,
                           int8_t *out) {
    int32_t quads = units & ~3;
    for (int32_t u = 0; u < quads; u += 4) {
        block(call, in, w, u, 4, simple, out);
    }
    if (units & 2) {
        block(call, in, w, quads, 2, simple, out);
    }
    if (units & 1) {
        block(call, in, w, units - 1, 1, simple, out);
    }
}

MCU_DSP_NOINLINE void simple_row(const fc_call *call, const int8_t *in, const int8_t *w, int32_t units, int8_t *out) {
    fc_row(call, in, w, units, 1, out);
}

MCU_DSP_NOINLINE void any_row(const fc_call *call, const int8_t *in, const int8_t *w, int32_t units, int8_t *out) {
    fc_row(call, in, w, units, 0, out);
}

/* mcu_dsp_all_simple with the bias test out of the loop when there is no bias. */
static int32_t units_simple(const int32_t *shift, const int32_t *bias, int32_t units, int32_t reach) {
    uint32_t limit = reach < (1 << 30) ? (uint32_t)((1 << 30) - reach) : 0u;
    for (int32_t u = 0; u < units; ++u) {
        uint32_t magnitude = bias == NULL ? 0u : (bias[u] < 0 ? 0u - (uint32_t)bias[u] : (uint32_t)bias[u]);
        if (shift[u] > -1 || magnitude >= limit) {
            return 0;
        }
    }
    return 1;
}

static int32_t fc_arguments_valid(const mcu_fc_params *params, const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                  const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                  const mcu_dims *out_dims, const int8_t *out) {
    if (params == NULL || quant == NULL || !mcu_dims_valid(in_dims) || !mcu_dims_valid(w_dims)
        || !mcu_dims_valid(out_dims) || in == NULL || w == NULL || out == NULL || quant->multiplier == NULL
        || quant->shift == NULL || quant->weights_offset != 0 || quant->input_offset < -127
        || quant->input_offset > 128 || !mcu_activation_valid(&params->activation, MCU_INT8)) {
        return 0;
    }
    return w_dims->h * w_dims->w * w_dims->c == in_dims->c && out_dims->c == w_dims->n
           && out_dims->n * out_dims->h * out_dims->w == in_dims->n * in_dims->h * in_dims->w;
}

/* Every row through `row` (simple_row or any_row). */
static mcu_status fc_run(const mcu_fc_params *params, const mcu_fc_quant *quant, const mcu_dims *in_dims,
                         const int8_t *in, const mcu_dims *w_dims, const int8_t *w, const int32_t *bias, int8_t *out,
                         int32_t simple) {
    int32_t rows = in_dims->n * in_dims->h * in_dims->w, depth = in_dims->c, units = w_dims->n;
    fc_call call = {quant, bias, depth, mcu_dsp_row_length(depth), mcu_dsp_pair(quant->input_offset),
                    mcu_dsp_reach(depth), params->activation.min, params->activation.max};
    void (*row)(const fc_call *, const int8_t *, const int8_t *, int32_t, int8_t *) =
        simple || units_simple(quant->shift, bias, units, call.reach) ? simple_row : any_row;
    for (int32_t r = 0; r < rows; ++r, in += depth, out += units) {
        row(&call, in, w, units, out);
    }
    return MCU_OK;
}

mcu_status mcu_fully_connected_s8_dsp_simple(const mcu_context *ctx, const mcu_fc_params *params,
                                             const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                             const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                             const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    (void)out_dims;
    return fc_run(params, quant, in_dims, in, w_dims, w, bias, out, 1);
}

mcu_status mcu_fully_connected_s8_dsp_prechecked(const mcu_context *ctx, const mcu_fc_params *params,
                                                 const mcu_fc_quant *quant, const mcu_dims *in_dims,
                                                 const int8_t *in, const mcu_dims *w_dims, const int8_t *w,
                                                 const int32_t *bias, const mcu_dims *out_dims, int8_t *out) {
    (void)ctx;
    (void)out_dims;
    return fc_run(params, quant, in_dims, in, w_dims, w, bias, out, 0);
}

mcu_status mcu_fully_connected_s8_dsp(const mcu_context *ctx, const mcu_fc_params *params,
                                      const mcu_fc_quant *quant, const mcu_dims *in_dims, const int8_t *in,
                                      const mcu_dims *w_dims, const int8_t *w, const int32_t *bias,
                                      const mcu_dims *out_dims, int8_t *out) {
    if (!fc_arguments_valid(params, quant, in_dims, in, w_dims, w, out_dims, out)) {
        return MCU_ERR_ARG;
    }
    return mcu_fully_connected_s8_dsp_prechecked(ctx, params, quant, in_dims, in, w_dims, w, bias, out_dims, out);
}
