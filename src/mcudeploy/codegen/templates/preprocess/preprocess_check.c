/* preprocess_check.c - check driver of the generated preprocess.c (mcudeploy.preprocess.c_check):
 * reads frame.bin, writes input.bin; with MCU_HARNESS_SYSTICK prints "mcu_ticks N" (one frame). */
#include <stdint.h>
#include <stdio.h>

#include "preprocess.h"

static uint8_t frame[PREPROCESS_FRAME_BYTES];
static uint8_t input[PREPROCESS_INPUT_BYTES];

#if defined(MCU_HARNESS_SYSTICK)
extern volatile uint32_t mcu_board_systick_wraps;
static uint32_t ticks(void) {
    uint32_t wraps, value;
    do {
        wraps = mcu_board_systick_wraps;
        value = *(volatile uint32_t *)0xE000E018u;
    } while (wraps != mcu_board_systick_wraps);
    return wraps * 0x1000000u + (0xFFFFFFu - value);
}
#endif

int main(void) {
    FILE *in, *out;
#if defined(MCU_HARNESS_SYSTICK)
    /* started long before the measurement: the first reload from CVR = 0 is not inside it */
    *(volatile uint32_t *)0xE000E014u = 0xFFFFFFu;
    *(volatile uint32_t *)0xE000E018u = 0u;
    *(volatile uint32_t *)0xE000E010u = 7u;
#endif
    in = fopen("frame.bin", "rb");
    if (in == NULL || fread(frame, 1, sizeof frame, in) != sizeof frame) {
        printf("cannot read frame.bin\n");
        return 2;
    }
    fclose(in);
#if defined(MCU_HARNESS_SYSTICK)
    {
        uint32_t start = ticks();
        preprocess_frame(frame, input);
        printf("mcu_ticks %lu\n", (unsigned long)(ticks() - start));
    }
#else
    preprocess_frame(frame, input);
#endif
    out = fopen("input.bin", "wb");
    if (out == NULL || fwrite(input, 1, sizeof input, out) != sizeof input) {
        printf("cannot write input.bin\n");
        return 2;
    }
    fclose(out);
    return 0;
}
