"""Which flashing tool is installed for ``validate --on serial:PORT``: mcudeploy does not flash
itself; it finds pyOCD, OpenOCD or STM32CubeProgrammer's CLI on ``PATH`` and says which (and the
command that would flash ``build/<board>/serial.elf``), or says clearly that none was found.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class FlashTool:
    name: str
    program: str
    command: str   # with {elf}


TOOLS = (
    FlashTool("pyOCD", "pyocd", "pyocd flash {elf}"),
    FlashTool("OpenOCD", "openocd", "openocd -f <board>.cfg -c 'program {elf} verify reset exit'"),
    FlashTool("STM32CubeProgrammer", "STM32_Programmer_CLI", "STM32_Programmer_CLI -c port=SWD -w {elf} -v -rst"),
)


def found_tools() -> list[FlashTool]:
    return [tool for tool in TOOLS if shutil.which(tool.program)]


def flash_line(elf: str = "build/<board>/serial.elf") -> str:
    """One line: the flashing tools found and how to flash ``elf``, or that none was found."""
    tools = found_tools()
    if not tools:
        return ("flashing: no flashing tool found (looked for " + ", ".join(t.program for t in TOOLS)
                + " on PATH); flash the serial firmware (make serial BOARD=...) with your IDE or install pyOCD")
    return "flashing: found " + "; ".join(f"{t.name}: {t.command.format(elf=elf)}" for t in tools)
