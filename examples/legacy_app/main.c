/*
 * main.c - an application written against the X-CUBE-AI ("legacy") embedded inference
 * client API, the way ST's documentation and STM32CubeMX's app_x-cube-ai.c show one:
 * ai_network_create_and_init with the activation buffer, the ai_buffer descriptors from
 * ai_network_inputs_get / ai_network_outputs_get with the application's data pointers,
 * ai_network_run, ai_network_get_error on failure, ai_network_get_report.
 *
 * It builds unchanged against `mcudeploy generate MODEL -o DIR --api legacy --test-vectors
 * DATA` (see Makefile): the inputs are the generated test vectors (mcudeploy/test_vectors.h),
 * each output is printed as one hex line ("output <sample> <index> <hex bytes>") and
 * compared with the integer reference's bytes. Exit status 0 when all match, 1 on a
 * mismatch, 2 when an API call fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "network.h"
#include "network_data.h"
#include "mcudeploy/test_vectors.h"

/* like ST's minimal example: one input, one output, one activation buffer */
#if AI_NETWORK_IN_NUM != 1 || AI_NETWORK_OUT_NUM != 1 || AI_NETWORK_DATA_ACTIVATIONS_COUNT != 1
#error "this example is written for a network with one input, one output and one activation buffer"
#endif

AI_ALIGNED(32) static ai_u8 activations[AI_NETWORK_DATA_ACTIVATIONS_SIZE];
AI_ALIGNED(32) static ai_u8 in_data[AI_NETWORK_IN_1_SIZE_BYTES];
AI_ALIGNED(32) static ai_u8 out_data[AI_NETWORK_OUT_1_SIZE_BYTES];

static ai_handle network = AI_HANDLE_NULL;
static ai_buffer *ai_input;
static ai_buffer *ai_output;

static void log_error(ai_error error, const char *where) {
    printf("E: AI error (%s) - type=0x%02x code=0x%02x\n", where, (unsigned)error.type, (unsigned)error.code);
    fflush(stdout);
}

static int ai_boot(void) {
    const ai_handle acts[] = {activations};
    ai_error error = ai_network_create_and_init(&network, acts, NULL);
    if (error.type != AI_ERROR_NONE) {
        log_error(error, "ai_network_create_and_init");
        return -1;
    }
    ai_input = ai_network_inputs_get(network, NULL);
    ai_output = ai_network_outputs_get(network, NULL);
    return ai_input != NULL && ai_output != NULL ? 0 : -1;
}

static void ai_print_report(void) {
    ai_network_report report;
    if (!ai_network_get_report(network, &report)) {
        log_error(ai_network_get_error(network), "ai_network_get_report");
        return;
    }
    printf("model %s (%s), %lu MACC, %lu nodes, activations %lu bytes\n", report.model_name,
           report.model_signature, (unsigned long)report.n_macc, (unsigned long)report.n_nodes,
           (unsigned long)AI_BUFFER_SIZE(&report.activations));
    printf("input 0: format type %u sign %u bits %u, %lu items, rank %lu, scale %f, zero point %ld\n",
           (unsigned)AI_BUFFER_FMT_GET_TYPE(report.inputs[0].format),
           (unsigned)AI_BUFFER_FMT_GET_SIGN(report.inputs[0].format),
           (unsigned)AI_BUFFER_FMT_GET_BITS(report.inputs[0].format), (unsigned long)AI_BUFFER_SIZE(&report.inputs[0]),
           (unsigned long)AI_BUFFER_SHAPE_SIZE(&report.inputs[0]),
           (double)AI_BUFFER_META_INFO_INTQ_GET_SCALE(report.inputs[0].meta_info, 0),
           (long)AI_BUFFER_META_INFO_INTQ_GET_ZEROPOINT(report.inputs[0].meta_info, 0));
    fflush(stdout);
}

static int ai_run(const void *input, void *output) {
    ai_i32 batches;
    ai_input[0].data = AI_HANDLE_PTR(input);
    ai_output[0].data = AI_HANDLE_PTR(output);
    batches = ai_network_run(network, &ai_input[0], &ai_output[0]);
    if (batches != 1) {
        log_error(ai_network_get_error(network), "ai_network_run");
        return -1;
    }
    return 0;
}

int main(void) {
    int sample, byte, mismatches = 0;
    printf("name: %s\n", AI_NETWORK_MODEL_NAME);
    if (ai_boot() != 0) {
        return 2;
    }
    ai_print_report();
    for (sample = 0; sample < TEST_VECTOR_COUNT; ++sample) {
        memcpy(in_data, test_vector_inputs[sample], AI_NETWORK_IN_1_SIZE_BYTES);
        if (ai_run(in_data, out_data) != 0) {
            return 2;
        }
        printf("output %d 0 ", sample);
        for (byte = 0; byte < AI_NETWORK_OUT_1_SIZE_BYTES; ++byte) {
            printf("%02x", out_data[byte]);
        }
        printf("\n");
        fflush(stdout);
        if (memcmp(out_data, test_vector_outputs[sample], AI_NETWORK_OUT_1_SIZE_BYTES) != 0) {
            ++mismatches;
        }
    }
    printf("%d sample(s), %d mismatch(es)\n", TEST_VECTOR_COUNT, mismatches);
    fflush(stdout);
    if (ai_network_destroy(network) != AI_HANDLE_NULL) {
        return 2;
    }
    return mismatches ? 1 : 0;
}
