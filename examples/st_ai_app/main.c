/*
 * main.c - an application written against the ST Edge AI embedded inference client API
 * (st-ai), the way ST's documentation shows one: runtime init, network context, activation
 * and I/O buffers sized by the STAI_NETWORK_* macros, run, read the outputs, report.
 *
 * It builds unchanged against `mcudeploy generate MODEL -o DIR --api st-ai --test-vectors
 * DATA` (see Makefile): the inputs are the generated test vectors (mcudeploy/test_vectors.h),
 * each output is printed as one hex line ("output <sample> <index> <hex bytes>") and
 * compared with the integer reference's bytes. Exit status 0 when all match, 1 on a
 * mismatch, 2 when an API call fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stai.h"
#include "network.h"
#include "mcudeploy/test_vectors.h"

#define LOG_PRINT(...) do { printf(__VA_ARGS__); fflush(stdout); } while (0)

/* like ST's minimal example: one input, one output, one activation buffer */
#if STAI_NETWORK_IN_NUM != 1 || STAI_NETWORK_OUT_NUM != 1 || STAI_NETWORK_ACTIVATIONS_NUM != 1
#error "this example is written for a network with one input, one output and one activation buffer"
#endif

/* the network context, the activations and the I/O buffers: all static, sized at compile time */
STAI_NETWORK_CONTEXT_DECLARE(network, STAI_NETWORK_CONTEXT_SIZE)

STAI_ALIGNED(STAI_NETWORK_ACTIVATION_1_ALIGNMENT)
static uint8_t activations_1[STAI_NETWORK_ACTIVATION_1_SIZE_BYTES];

STAI_ALIGNED(STAI_NETWORK_IN_1_ALIGNMENT)
static uint8_t input_1[STAI_NETWORK_IN_1_SIZE_BYTES];

STAI_ALIGNED(STAI_NETWORK_OUT_1_ALIGNMENT)
static uint8_t output_1[STAI_NETWORK_OUT_1_SIZE_BYTES];

static int check(stai_return_code code, const char *call) {
    if (code != STAI_SUCCESS) {
        LOG_PRINT("E: %s failed: 0x%lx\n", call, (unsigned long)code);
        return 1;
    }
    return 0;
}

static void print_report(void) {
    stai_network_info info;
    stai_size index;
    if (check(stai_network_get_info(network, &info), "stai_network_get_info")) {
        return;
    }
    LOG_PRINT("model %s (c-name %s), %lu MACC, %lu nodes\n", info.model_signature, info.c_model_name,
              (unsigned long)info.n_macc, (unsigned long)info.n_nodes);
    for (index = 0; index < info.n_inputs; ++index) {
        LOG_PRINT("input %d: %s, format %d, rank %d, %d bytes, scale %f, zero point %d\n", (int)index,
                  info.inputs[index].name, (int)info.inputs[index].format, (int)info.inputs[index].shape.size,
                  (int)info.inputs[index].size_bytes,
                  info.inputs[index].scale.size ? (double)info.inputs[index].scale.data[0] : 0.0,
                  info.inputs[index].zeropoint.size ? (int)info.inputs[index].zeropoint.data[0] : 0);
    }
    for (index = 0; index < info.n_activations; ++index) {
        LOG_PRINT("activations %d: %d bytes\n", (int)index, (int)info.activations[index].size_bytes);
    }
}

int main(void) {
    const stai_ptr acts[STAI_NETWORK_ACTIVATIONS_NUM] = {activations_1};
    const stai_ptr inputs[STAI_NETWORK_IN_NUM] = {input_1};
    const stai_ptr outputs[STAI_NETWORK_OUT_NUM] = {output_1};
    int sample, byte, mismatches = 0;

    LOG_PRINT("name: %s\n", STAI_NETWORK_MODEL_NAME);
    if (check(stai_runtime_init(), "stai_runtime_init") ||
        check(stai_network_init(network), "stai_network_init") ||
        check(stai_network_set_activations(network, acts, STAI_NETWORK_ACTIVATIONS_NUM),
              "stai_network_set_activations") ||
        check(stai_network_set_inputs(network, inputs, STAI_NETWORK_IN_NUM), "stai_network_set_inputs") ||
        check(stai_network_set_outputs(network, outputs, STAI_NETWORK_OUT_NUM), "stai_network_set_outputs")) {
        return 2;
    }
    print_report();

    for (sample = 0; sample < TEST_VECTOR_COUNT; ++sample) {
        memcpy(input_1, test_vector_inputs[sample], STAI_NETWORK_IN_1_SIZE_BYTES);
        if (check(stai_network_run(network, STAI_MODE_SYNC), "stai_network_run")) {
            return 2;
        }
        printf("output %d 0 ", sample);
        for (byte = 0; byte < STAI_NETWORK_OUT_1_SIZE_BYTES; ++byte) {
            printf("%02x", output_1[byte]);
        }
        LOG_PRINT("\n");
        if (memcmp(output_1, test_vector_outputs[sample], STAI_NETWORK_OUT_1_SIZE_BYTES) != 0) {
            ++mismatches;
        }
    }
    LOG_PRINT("%d sample(s), %d mismatch(es)\n", TEST_VECTOR_COUNT, mismatches);

    if (check(stai_network_deinit(network), "stai_network_deinit") ||
        check(stai_runtime_deinit(), "stai_runtime_deinit")) {
        return 2;
    }
    return mismatches ? 1 : 0;
}
