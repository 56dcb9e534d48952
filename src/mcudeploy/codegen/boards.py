"""The Cortex-M cores the generated Makefile knows and the QEMU boards the generated code is
validated on (data, not code).

A board's memory map is QEMU's (``hw/arm/mps2.c``, ``hw/arm/mps2-tz.c``): ``mps2-an386``
has 4 MB of code SRAM at 0 and 4 MB of data SRAM at 0x2000_0000; ``mps3-an547`` boots from
ITCM at 0 (vector table), runs code from the 2 MB SRAM at 0x0100_0000 and keeps data in
the 4 MB ISRAM at 0x2100_0000, and has DDR at 0x6000_0000 (2 GB in QEMU), which stands in
for a board's PSRAM: a graph split's external arena (section ``.bss.mcu_external.*``) goes
there; on ``mps2-an386`` it stays in RAM. ``ns_per_tick`` is one SysTick tick of the board's core clock
(25 MHz and 32 MHz): under ``-icount shift=0`` QEMU advances virtual time 1 ns per executed
instruction, so ``instructions = ticks * ns_per_tick`` (to within one tick).
"""
from __future__ import annotations

from dataclasses import dataclass

CORE_FLAGS = {
    "cortex-m4": "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
    "cortex-m7": "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16",
    "cortex-m33": "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16",
    "cortex-m55": "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard",
}


@dataclass(frozen=True)
class Board:
    name: str
    core: str
    description: str
    vectors_base: int
    code_base: int
    code_size: str
    ram_base: int
    ram_size: str
    ns_per_tick: float
    stack_size: int = 0x8000
    external_base: int = 0          # external RAM for a graph split's arena (0: none, it goes to RAM)
    external_size: str = ""
    uart_base: int = 0x4000_4000    # CMSDK APB UART0 (the serial link of harness_serial.c)


BOARDS = {
    "mps2-an386": Board("mps2-an386", "cortex-m4", "Arm MPS2 FPGA image AN386, Cortex-M4, 25 MHz",
                        0x0, 0x400, "4M - 1K", 0x2000_0000, "4M", 40.0),
    "mps3-an547": Board("mps3-an547", "cortex-m55", "Arm MPS3 FPGA image AN547, Cortex-M55, 32 MHz",
                        0x0, 0x0100_0000, "2M", 0x2100_0000, "4M", 31.25,
                        external_base=0x6000_0000, external_size="256M", uart_base=0x5930_3000),
}
