/*
 * cmsis_nn_harness.c - time CMSIS-NN kernels under QEMU (tools/cmsis_nn_measure.py builds this
 * file with the CMSIS-NN library of a source folder; nothing of the library is copied here).
 *
 * Two modes, one set of kernel calls (the public entry points TensorFlow Lite Micro's CMSIS-NN
 * kernels call: the convolution and depthwise wrappers, the fully connected, elementwise,
 * pooling, softmax, transpose and concatenation functions):
 *
 * - synthetic (HARNESS_LAYER_FILE undefined): the cases of cases.h, with pseudo-random input,
 *   weights, bias and per-channel multipliers (the estimator's instruction model);
 * - layer file (HARNESS_LAYER_FILE defined): the records of the semihosting file "layers.bin"
 *   (an int32 count, then per layer a harness_case followed by its blobs: input, second input,
 *   filter, bias (int32), multipliers, shifts (int32), expected output): a real model's layers,
 *   each with its real weights, quantization and input activations; the output is compared
 *   byte for byte with the expected one (mcudeploy's integer reference).
 *
 * Each case prints "case I TICKS MISMATCHES": SysTick ticks of the core clock around the call
 * (under QEMU -icount shift=0 a tick is a fixed number of executed instructions) and the number
 * of output bytes that differ from the expected ones (0 in synthetic mode). A negative TICKS is
 * a refusal (-1 scratch too big, -2 the library's status, -3 unknown kind, -4 bad record).
 * Preparation done at TFLM's prepare time (Helium's fully connected kernel sums) is not timed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "arm_nnfunctions.h"

enum { KIND_CONV = 1, KIND_DEPTHWISE, KIND_FULLY_CONNECTED, KIND_ADD, KIND_MUL, KIND_AVG_POOL,
       KIND_MAX_POOL, KIND_SOFTMAX, KIND_CONCAT, KIND_TRANSPOSE };

/* Field order = FIELDS of cmsis_nn_measure.py (the record header is these int32s, in order). */
typedef struct {
    int32_t kind, n, h, w, c;        /* input */
    int32_t kh, kw, o;               /* filter (o: output channels / units) */
    int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int32_t out_h, out_w;
    int32_t extra;                   /* concat: input count; softmax: rows; transpose: rank */
    int32_t input_offset, output_offset, filter_offset, activation_min, activation_max;
    int32_t per_channel;             /* fully connected: per-channel multipliers */
    int32_t multiplier_1, shift_1, offset_2, multiplier_2, shift_2, left_shift;   /* add / mul / softmax */
    int32_t out_multiplier, out_shift, diff_min;
    int32_t perm_0, perm_1, perm_2, perm_3;                                       /* transpose */
    int32_t input_bytes, input2_bytes, filter_bytes, bias_count, quant_count, output_bytes;
} harness_case;

#define HARNESS_BYTES (320u * 1024u)
#define HARNESS_CHANNELS 2048
static int8_t harness_input[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_input2[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_filter[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_output[HARNESS_BYTES] __attribute__((aligned(16)));
static int8_t harness_scratch[HARNESS_BYTES] __attribute__((aligned(16)));
static int32_t harness_bias[HARNESS_CHANNELS], harness_multiplier[HARNESS_CHANNELS], harness_shift[HARNESS_CHANNELS];
static const int32_t *bias_data = harness_bias;

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

static cmsis_nn_dims dims(int32_t n, int32_t h, int32_t w, int32_t c) {
    cmsis_nn_dims result = {n, h, w, c};
    return result;
}

static int32_t run_conv(const harness_case *item) {
    cmsis_nn_conv_params params = {item->input_offset, item->output_offset, {item->stride_w, item->stride_h},
                                   {item->pad_w, item->pad_h}, {item->dilation_w, item->dilation_h},
                                   {item->activation_min, item->activation_max}};
    cmsis_nn_per_channel_quant_params quant = {harness_multiplier, harness_shift};
    cmsis_nn_dims in = dims(item->n, item->h, item->w, item->c), filter = dims(item->o, item->kh, item->kw, item->c);
    cmsis_nn_dims bias = dims(1, 1, 1, item->o), out = dims(item->n, item->out_h, item->out_w, item->o);
    cmsis_nn_context context = {harness_scratch, arm_convolve_wrapper_s8_get_buffer_size(&params, &in, &filter, &out)};
    if (context.size > (int32_t)HARNESS_BYTES) {
        return -1;
    }
    uint32_t start = ticks();
    arm_cmsis_nn_status status = arm_convolve_wrapper_s8(&context, &params, &quant, &in, harness_input, &filter,
                                                         harness_filter, &bias, bias_data, &out, harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_depthwise(const harness_case *item) {
    cmsis_nn_dw_conv_params params = {item->input_offset, item->output_offset, item->o / item->c,
                                      {item->stride_w, item->stride_h}, {item->pad_w, item->pad_h},
                                      {item->dilation_w, item->dilation_h},
                                      {item->activation_min, item->activation_max}};
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
                                                               &filter, harness_filter, &bias, bias_data, &out,
                                                               harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

/* TFLM: per-tensor weights -> arm_fully_connected_s8, per-channel -> arm_fully_connected_per_channel_s8. */
static int32_t run_fully_connected(const harness_case *item) {
    cmsis_nn_fc_params params = {item->input_offset, item->filter_offset, item->output_offset,
                                 {item->activation_min, item->activation_max}};
    cmsis_nn_per_tensor_quant_params quant = {harness_multiplier[0], harness_shift[0]};
    cmsis_nn_per_channel_quant_params channel_quant = {harness_multiplier, harness_shift};
    cmsis_nn_dims in = dims(item->n, 1, 1, item->c), filter = dims(item->c, 1, 1, item->o);
    cmsis_nn_dims bias = dims(1, 1, 1, item->o), out = dims(item->n, 1, 1, item->o);
    cmsis_nn_context context = {harness_scratch, arm_fully_connected_s8_get_buffer_size(&filter)};
    if (context.size > 0) {   /* Helium: kernel sums, computed once at prepare time (not timed) */
        arm_vector_sum_s8((int32_t *)harness_scratch, item->c, item->o, harness_filter, item->input_offset,
                          item->filter_offset, bias_data);
    }
    uint32_t start = ticks();
    arm_cmsis_nn_status status = item->per_channel
        ? arm_fully_connected_per_channel_s8(&context, &params, &channel_quant, &in, harness_input, &filter,
                                             harness_filter, &bias, bias_data, &out, harness_output)
        : arm_fully_connected_s8(&context, &params, &quant, &in, harness_input, &filter, harness_filter, &bias,
                                 bias_data, &out, harness_output);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_elementwise(const harness_case *item) {
    int32_t size = item->n * item->h * item->w * item->c;
    uint32_t start = ticks();
    arm_cmsis_nn_status status = item->kind == KIND_ADD
        ? arm_elementwise_add_s8(harness_input, harness_input2, item->input_offset, item->multiplier_1,
                                 item->shift_1, item->offset_2, item->multiplier_2, item->shift_2, item->left_shift,
                                 harness_output, item->output_offset, item->out_multiplier, item->out_shift,
                                 item->activation_min, item->activation_max, size)
        : arm_elementwise_mul_s8(harness_input, harness_input2, item->input_offset, item->offset_2, harness_output,
                                 item->output_offset, item->out_multiplier, item->out_shift, item->activation_min,
                                 item->activation_max, size);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
}

static int32_t run_pool(const harness_case *item) {
    cmsis_nn_pool_params params = {{item->stride_w, item->stride_h}, {item->pad_w, item->pad_h},
                                   {item->activation_min, item->activation_max}};
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
    arm_softmax_s8(harness_input, item->extra, item->c, item->multiplier_1, item->shift_1, item->diff_min,
                   harness_output);
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

static int32_t run_transpose(const harness_case *item) {
    /* input n, h, w, c; output dims the permuted ones (TFLM's transpose, rank item->extra <= 4) */
    const uint32_t permutation[4] = {(uint32_t)item->perm_0, (uint32_t)item->perm_1, (uint32_t)item->perm_2,
                                     (uint32_t)item->perm_3};
    const int32_t sizes[4] = {item->n, item->h, item->w, item->c};
    cmsis_nn_dims in = dims(item->n, item->h, item->w, item->c);
    cmsis_nn_dims out = dims(sizes[permutation[0]], sizes[permutation[1]], sizes[permutation[2]],
                             sizes[permutation[3]]);
    cmsis_nn_transpose_params params = {item->extra, permutation};
    uint32_t start = ticks();
    arm_cmsis_nn_status status = arm_transpose_s8(harness_input, harness_output, &in, &out, &params);
    uint32_t stop = ticks();
    return status == ARM_CMSIS_NN_SUCCESS ? (int32_t)(stop - start) : -2;
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
    case KIND_TRANSPOSE: return run_transpose(item);
    default: return -3;
    }
}

static void start_systick(void) {
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0u;
    SYST_CSR = 7u;
}

#ifdef HARNESS_LAYER_FILE
static int8_t harness_expected[HARNESS_BYTES] __attribute__((aligned(16)));

static int read_blob(FILE *file, void *buffer, int32_t bytes, uint32_t capacity) {
    if (bytes < 0 || (uint32_t)bytes > capacity) {
        return 0;
    }
    return bytes == 0 || fread(buffer, 1, (size_t)bytes, file) == (size_t)bytes;
}

static int read_layer(FILE *file, harness_case *item) {
    const uint32_t channels = HARNESS_CHANNELS * sizeof(int32_t);
    return fread(item, sizeof(*item), 1, file) == 1
        && read_blob(file, harness_input, item->input_bytes, HARNESS_BYTES)
        && read_blob(file, harness_input2, item->input2_bytes, HARNESS_BYTES)
        && read_blob(file, harness_filter, item->filter_bytes, HARNESS_BYTES)
        && read_blob(file, harness_bias, item->bias_count * 4, channels)
        && read_blob(file, harness_multiplier, item->quant_count * 4, channels)
        && read_blob(file, harness_shift, item->quant_count * 4, channels)
        && read_blob(file, harness_expected, item->output_bytes, HARNESS_BYTES);
}

int main(void) {
    FILE *file = fopen("layers.bin", "rb");
    int32_t count = 0;
    if (file == NULL || fread(&count, sizeof(count), 1, file) != 1) {
        printf("error: cannot read layers.bin\n");
        return 1;
    }
    start_systick();
    for (int32_t index = 0; index < count; ++index) {
        harness_case item;
        if (!read_layer(file, &item)) {
            printf("case %ld -4 0\n", (long)index);
            return 1;
        }
        bias_data = item.bias_count > 0 ? harness_bias : NULL;
        memset(harness_output, 0x5A, (size_t)item.output_bytes);
        int32_t elapsed = run_case(&item);
        int32_t mismatches = 0;
        for (int32_t byte = 0; byte < item.output_bytes; ++byte) {
            mismatches += harness_output[byte] != harness_expected[byte];
        }
        printf("case %ld %ld %ld\n", (long)index, (long)elapsed, (long)mismatches);
    }
    fclose(file);
    return 0;
}
#else
#include "cases.h"

static uint32_t random_state = 12345u;

static void fill(int8_t *data, int32_t count) {
    for (int32_t index = 0; index < count; ++index) {
        random_state = random_state * 1103515245u + 12345u;
        data[index] = (int8_t)(random_state >> 24);
    }
}

static void fill_quant(int32_t channels) {
    for (int32_t index = 0; index < channels && index < HARNESS_CHANNELS; ++index) {
        random_state = random_state * 1103515245u + 12345u;
        harness_bias[index] = (int32_t)(random_state >> 20) - 2048;
        harness_multiplier[index] = 1200000000 + (int32_t)(random_state >> 12);
        harness_shift[index] = -9 - (int32_t)(index % 3);
    }
}

int main(void) {
    fill(harness_input, (int32_t)HARNESS_BYTES);
    fill(harness_input2, (int32_t)HARNESS_BYTES);
    fill(harness_filter, (int32_t)HARNESS_BYTES);
    fill_quant(HARNESS_CHANNELS);
    start_systick();
    for (uint32_t index = 0; index < sizeof(harness_cases) / sizeof(harness_cases[0]); ++index) {
        printf("case %lu %ld 0\n", (unsigned long)index, (long)run_case(&harness_cases[index]));
    }
    return 0;
}
#endif
