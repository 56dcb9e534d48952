/*
 * cmsis_nn_harness.c - time CMSIS-NN kernels under QEMU for the estimator's instruction model
 * (tools/cmsis_nn_measure.py writes cases.h and builds this file with the CMSIS-NN sources).
 *
 * For every case of cases.h: fill the input, weights and bias with pseudo-random numbers,
 * set valid quantization parameters, call the library's public entry point (the same ones
 * TensorFlow Lite Micro's CMSIS-NN kernels call: the convolution and depthwise wrappers, the
 * fully connected, elementwise, pooling, softmax and concatenation functions), and print
 * "case I TICKS": SysTick ticks of the core clock around the call. Under QEMU with
 * -icount shift=0 a tick is a fixed number of executed instructions. Buffer preparation
 * (kernel sums for Helium's fully connected, done at TFLM's prepare time) is not timed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arm_nnfunctions.h"

enum { KIND_CONV = 1, KIND_DEPTHWISE, KIND_FULLY_CONNECTED, KIND_ADD, KIND_MUL, KIND_AVG_POOL,
       KIND_MAX_POOL, KIND_SOFTMAX, KIND_CONCAT };

typedef struct {
    int32_t kind, n, h, w, c;        /* input */
    int32_t kh, kw, o;               /* filter (o: output channels / units) */
    int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int32_t out_h, out_w;
    int32_t extra;                   /* concat: input count; softmax: rows */
} harness_case;

#include "cases.h"

#define HARNESS_BYTES (320u * 1024u)
static int8_t harness_input[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_input2[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_filter[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_output[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_scratch[HARNESS_BYTES] __attribute__((aligned(16)));
static int32_t harness_bias[2048], harness_multiplier[2048], harness_shift[2048];

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
extern volatile uint32_t mcu_board_systick_wraps;

static uint32_t ticks(void) {
    uint32_t wraps, value;
    do {
        wraps = mcu_board_systick_wraps;
        value = SYST_CVR;
    } while (wraps != mcu_board_systick_wraps);
    return wraps * 0x1000000u + (0xFFFFFFu - value);
}

static uint32_t random_state = 12345u;

static void fill(int8_t *data, int32_t count) {
    for (int32_t index = 0; index < count; ++index) {
        random_state = random_state * 1103515245u + 12345u;
        data[index] = (int8_t)(random_state >> 24);
    }
}

static void fill_quant(int32_t channels) {
    for (int32_t index = 0; index < channels && index < 2048; ++index) {
        random_state = random_state * 1103515245u + 12345u;
        harness_bias[index] = (int32_t)(random_state >> 20) - 2048;
        harness_multiplier[index] = 1200000000 + (int32_t)(random_state >> 12);
        harness_shift[index] = -9 - (int32_t)(index % 3);
    }
}

static cmsis_nn_dims dims(int32_t n, int32_t h, int32_t w, int32_t c) {
    cmsis_nn_dims result = {n, h, w, c};
    return result;
}

static int32_t run_conv(const harness_case *item) {
    cmsis_nn_conv_params params = {3, -2, {item->stride_w, item->stride_h}, {item->pad_w, item->pad_h},
                                   {item->dilation_w, item->dilation_h}, {-128, 127}};
    cmsis_nn_per_channel_quant_params quant = {harness_multiplier, harness_shift};
    cmsis_nn_dims in = dims(item->n, item->h, item->w, item->c), filter = dims(item->o, item->kh, item->kw, item->c);
    cmsis_nn_dims bias = dims(1, 1, 1, item->o), out = dims(item->n, item->out_h, item->out_w, item->o);
    cmsis_nn_context context = {harness_scratch, arm_convolve_wrapper_s8_get_buffer_size(&params, &in, &filter, &out)};
    if (context.size > (int32_t)HARNESS_BYTES) {
        return -1;
    }
    uint32_t start = ticks();
    arm_cmsis_nn_status status = arm_convolve_wrapper_s8(&context, &params, &quant, &in, harness_input, &filter,
                                                         harness_filter, &bias, harness_bias, &out, harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_depthwise(const harness_case *item) {
    cmsis_nn_dw_conv_params params = {3, -2, item->o / item->c, {item->stride_w, item->stride_h},
                                      {item->pad_w, item->pad_h}, {item->dilation_w, item->dilation_h}, {-128, 127}};
    cmsis_nn_per_channel_quant_params quant = {harness_multiplier, harness_shift};
    cmsis_nn_dims in = dims(item->n, item->h, item->w, item->c), filter = dims(1, item->kh, item->kw, item->o);
    cmsis_nn_dims bias = dims(1, 1, 1, item->o), out = dims(item->n, item->out_h, item->out_w, item->o);
    cmsis_nn_context context = {harness_scratch,
                                arm_depthwise_conv_wrapper_s8_get_buffer_size(&params, &in, &filter, &out)};
    if (context.size > (int32_t)HARNESS_BYTES) {
        return -1;
    }
    uint32_t start = ticks();
    arm_cmsis_nn_status status = arm_depthwise_conv_wrapper_s8(&context, &params, &quant, &in, harness_input,
                                                               &filter, harness_filter, &bias, harness_bias, &out,
                                                               harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_fully_connected(const harness_case *item) {
    cmsis_nn_fc_params params = {3, 0, -2, {-128, 127}};
    cmsis_nn_per_tensor_quant_params quant = {harness_multiplier[0], harness_shift[0]};
    cmsis_nn_dims in = dims(item->n, 1, 1, item->c), filter = dims(item->c, 1, 1, item->o);
    cmsis_nn_dims bias = dims(1, 1, 1, item->o), out = dims(item->n, 1, 1, item->o);
    cmsis_nn_context context = {harness_scratch, arm_fully_connected_s8_get_buffer_size(&filter)};
    if (context.size > 0) {   /* Helium: kernel sums, computed once at prepare time (not timed) */
        arm_vector_sum_s8((int32_t *)harness_scratch, item->c, item->o, harness_filter, 3, 0, harness_bias);
    }
    uint32_t start = ticks();
    arm_cmsis_nn_status status = arm_fully_connected_s8(&context, &params, &quant, &in, harness_input, &filter,
                                                        harness_filter, &bias, harness_bias, &out, harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_elementwise(const harness_case *item) {
    int32_t size = item->n * item->h * item->w * item->c;
    uint32_t start = ticks();
    arm_cmsis_nn_status status = item->kind == KIND_ADD
        ? arm_elementwise_add_s8(harness_input, harness_input2, 3, 1300000000, -1, -5, 1100000000, 0, 20,
                                 harness_output, -2, 1500000000, -20, -128, 127, size)
        : arm_elementwise_mul_s8(harness_input, harness_input2, 3, -5, harness_output, -2, 1500000000, -8,
                                 -128, 127, size);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_pool(const harness_case *item) {
    cmsis_nn_pool_params params = {{item->stride_w, item->stride_h}, {item->pad_w, item->pad_h}, {-128, 127}};
    cmsis_nn_dims in = dims(item->n, item->h, item->w, item->c), filter = dims(1, item->kh, item->kw, 1);
    cmsis_nn_dims out = dims(item->n, item->out_h, item->out_w, item->c);
    cmsis_nn_context context = {harness_scratch, arm_avgpool_s8_get_buffer_size(item->out_w, item->c)};
    uint32_t start = ticks();
    arm_cmsis_nn_status status = item->kind == KIND_AVG_POOL
        ? arm_avgpool_s8(&context, &params, &in, harness_input, &filter, &out, harness_output)
        : arm_max_pool_s8(&context, &params, &in, harness_input, &filter, &out, harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_softmax(const harness_case *item) {
    uint32_t start = ticks();
    arm_softmax_s8(harness_input, item->extra, item->c, 1518500250, 22, -248, harness_output);
    return (int32_t)(ticks() - start);
}

static int32_t run_concat(const harness_case *item) {
    /* item->extra inputs of c channels each, concatenated along channels (TFLM's z axis) */
    int32_t out_channels = item->c * item->extra;
    uint32_t start = ticks();
    for (int32_t index = 0; index < item->extra; ++index) {
        arm_concatenation_s8_z(harness_input, (uint16_t)item->w, (uint16_t)item->h, (uint16_t)item->c,
                               (uint16_t)item->n, harness_output, (uint16_t)out_channels,
                               (uint32_t)(index * item->c));
    }
    return (int32_t)(ticks() - start);
}

static int32_t run_case(const harness_case *item) {
    switch (item->kind) {
    case KIND_CONV: return run_conv(item);
    case KIND_DEPTHWISE: return run_depthwise(item);
    case KIND_FULLY_CONNECTED: return run_fully_connected(item);
    case KIND_ADD: case KIND_MUL: return run_elementwise(item);
    case KIND_AVG_POOL: case KIND_MAX_POOL: return run_pool(item);
    case KIND_SOFTMAX: return run_softmax(item);
    case KIND_CONCAT: return run_concat(item);
    default: return -3;
    }
}

int main(void) {
    fill(harness_input, (int32_t)HARNESS_BYTES);
    fill(harness_input2, (int32_t)HARNESS_BYTES);
    fill(harness_filter, (int32_t)HARNESS_BYTES);
    fill_quant(2048);
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 7u;
    for (uint32_t index = 0; index < sizeof(harness_cases) / sizeof(harness_cases[0]); ++index) {
        printf("case %lu %ld\n", (unsigned long)index, (long)run_case(&harness_cases[index]));
    }
    return 0;
}
