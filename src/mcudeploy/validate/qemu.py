"""Run the generated C code on emulated Cortex-M boards: cross-compile the project's harness
for ``mps2-an386`` (Cortex-M4) or ``mps3-an547`` (Cortex-M55) with arm-none-eabi-gcc and
newlib's semihosting library (``--specs=rdimon.specs``), run it with
``qemu-system-arm -M <board> -semihosting -nographic -icount shift=0 -kernel harness.elf``
(the harness reads ``inputs.bin`` and writes ``outputs.bin`` in QEMU's working folder
through semihosting) and read the outputs back.

Instructions per inference: with ``-icount shift=0`` QEMU's virtual clock advances 1 ns per
executed instruction; the harness reads SysTick (core clock, wraps counted by its
interrupt) around each ``network_run`` and prints ``mcu_ticks N``; instructions =
``N * ns_per_tick`` of the board (:mod:`mcudeploy.codegen.boards`), repeatable run to run,
to within one tick (40 or 31.25 instructions).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from ..codegen.boards import BOARDS
from ..errors import UsageError
from .c_runner import CRunResult, generate_for_run, read_outputs, run_command, work_folder, write_samples

ENGINE_BOARDS = {"qemu-m4": "mps2-an386", "qemu-m55": "mps3-an547"}
TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm", "make")
INSTALL_HINT = ("install the Cortex-M toolchain and emulator with tools/install_toolchain.sh "
                "(Debian packages gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
RUN_TIMEOUT_PER_SAMPLE = 120.0


def require_toolchain(engine: str) -> None:
    """:class:`UsageError` naming the missing tools and how to install them."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise UsageError(f"--on/--engine {engine}: {', '.join(missing)} not found; {INSTALL_HINT}")


def board_of(engine: str):
    try:
        return BOARDS[ENGINE_BOARDS[engine]]
    except KeyError:
        raise UsageError(f"unknown emulator {engine!r}; choose one of {', '.join(ENGINE_BOARDS)}") from None


def build_board(project: Path, board_name: str, profile: bool = False) -> Path:
    run_command(["make", "-s", f"BOARD={board_name}", f"PROFILE={int(profile)}"], project,
                f"cross-compiling the generated code for {board_name}")
    return project / "build" / (f"{board_name}-profile" if profile else board_name) / "harness.elf"


def run_elf(elf: Path, board_name: str, folder: Path, samples: int) -> str:
    """Run ``elf`` on ``board_name`` with semihosting in ``folder``; its standard output."""
    command = ["qemu-system-arm", "-M", board_name, "-semihosting", "-nographic", "-icount", "shift=0",
               "-monitor", "none", "-serial", "none", "-kernel", str(elf)]
    return run_command(command, folder, f"running the generated code under QEMU {board_name}",
                       timeout=30 + RUN_TIMEOUT_PER_SAMPLE * samples)


def instructions_from(output: str, ns_per_tick: float) -> list[int]:
    """Instructions per inference from the harness's ``mcu_ticks N`` lines."""
    return [int(round(int(ticks) * ns_per_tick)) for ticks in re.findall(r"^mcu_ticks (\d+)", output, re.M)]


def layer_instructions_from(output: str, ns_per_tick: float, layers: int) -> list[list[int]]:
    """Instructions per layer of every inference from ``mcu_layer_ticks I N`` lines."""
    values = [int(round(int(ticks) * ns_per_tick))
              for _, ticks in re.findall(r"^mcu_layer_ticks (\d+) (\d+)", output, re.M)]
    return [values[start:start + layers] for start in range(0, len(values), layers)] if layers else []


def run_qemu(deployment, feeds: dict[str, np.ndarray], engine: str, *, keep: Path | None = None,
             profile: bool = False) -> CRunResult:
    """Generate, cross-compile and run on the emulated board of ``engine`` (batched feeds).
    ``profile``: also count instructions per layer (a second build with the per-layer hook;
    the per-inference counts come from the build without it)."""
    require_toolchain(engine)
    board = board_of(engine)
    graph = deployment.graph
    with work_folder(keep) as folder:
        project = generate_for_run(deployment, folder / "project")
        elf = build_board(project, board.name)
        count = write_samples(graph, feeds, folder / "inputs.bin")
        output = run_elf(elf, board.name, folder, count)
        outputs = read_outputs(graph, folder / "outputs.bin", count)
        result = CRunResult(outputs, instructions_from(output, board.ns_per_tick),
                            project=project if keep is not None else None)
        if profile:
            profiled = run_elf(build_board(project, board.name, profile=True), board.name, folder, count)
            layers = len(deployment.plan.order) - len(deployment.plan.elided_nodes)
            result.layer_instructions = layer_instructions_from(profiled, board.ns_per_tick, layers)
        return result
