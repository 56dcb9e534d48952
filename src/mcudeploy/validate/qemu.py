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

A network whose data do not fit the board's RAM (the link fails with the region
overflowing: a 256 x 256 U-Net's 8 MB arena on ``mps3-an547``'s 4 MB ISRAM) is linked again
with RAM in the board's external RAM (DDR on ``mps3-an547``: :func:`link_in_external_ram`),
with a log line saying so. QEMU models no memory timing, so the outputs and the
instruction counts are those of the board with enough RAM.
"""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..codegen.boards import BOARDS
from ..errors import UsageError
from ..mapping.mapper import node_macc
from ..progress import phase
from .c_runner import (
    CodegenRunError,
    CRunResult,
    generate_for_run,
    read_outputs,
    run_command,
    work_folder,
    write_samples,
)

if TYPE_CHECKING:
    from ..deployment import Deployment

log = logging.getLogger(__name__)
ENGINE_BOARDS = {"qemu-m4": "mps2-an386", "qemu-m55": "mps3-an547"}
TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm", "make")
INSTALL_HINT = ("install the Cortex-M toolchain and emulator with tools/install_toolchain.sh "
                "(Debian packages gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
RUN_TIMEOUT_PER_SAMPLE = 120.0
SLOWEST_MACC_PER_SECOND = 5e6   # emulated int8 MACC per second on a loaded 2-core host, with margin


def qemu_engine(target) -> str:
    """The QEMU engine that runs the code of ``target``'s core (``Core.arch``): ``qemu-m55``
    (mps3-an547, Armv8.1-M) for an Armv8-M core, else ``qemu-m4`` (mps2-an386, Armv7E-M, also
    without a target or for an architecture mcudeploy does not know)."""
    return "qemu-m55" if target is not None and target.core.armv8m else "qemu-m4"


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


RAM_OVERFLOW = re.compile(r"region .RAM. overflowed|will not fit in region .RAM.|"
                          r"cannot move location counter backwards")
RAM_LINE = re.compile(r"RAM \(rwx\)(\s*): ORIGIN = 0x[0-9A-Fa-f]+, LENGTH = \S+")
EXTERNAL_LINE = re.compile(r"EXTERNAL \(rw\)(\s*): ORIGIN = (0x[0-9A-Fa-f]+), LENGTH = \S+")


def link_in_external_ram(project: Path, board) -> bool:
    """Rewrite ``boards/<board>.ld`` of ``project``: RAM becomes the upper half of the
    board's external RAM, EXTERNAL its lower half (module docstring). False when the
    board has no external RAM."""
    if not board.external_base:
        return False
    script = project / "boards" / f"{board.name}.ld"
    text = script.read_text()
    half = _megabytes(board.external_size) // 2
    text = RAM_LINE.sub(lambda m: f"RAM (rwx){m.group(1)}: ORIGIN = 0x{board.external_base + (half << 20):08X}, "
                        f"LENGTH = {half}M", text, count=1)
    text = EXTERNAL_LINE.sub(lambda m: f"EXTERNAL (rw){m.group(1)}: ORIGIN = {m.group(2)}, LENGTH = {half}M",
                             text, count=1)
    script.write_text(text)
    return True


def _megabytes(size: str) -> int:
    return int(size.rstrip("M"))


def build_board_fitting(project: Path, board) -> Path:
    """:func:`build_board`, linked again in external RAM when the data overflow RAM."""
    try:
        return build_board(project, board.name)
    except CodegenRunError as err:
        if not RAM_OVERFLOW.search(str(err)) or not link_in_external_ram(project, board):
            raise
    log.info("the network's data do not fit the %s RAM (%s); for this QEMU run RAM is the board's "
             "external RAM at 0x%08X (QEMU models no memory timing: outputs and instruction counts "
             "are unchanged)", board.name, board.ram_size, board.external_base)
    return build_board(project, board.name)


def run_elf(elf: Path, board_name: str, folder: Path, samples: int, macc: int = 0) -> str:
    """Run ``elf`` on ``board_name`` with semihosting in ``folder``; its standard output.
    The time limit (a hang guard) grows with the samples and the network's ``macc``."""
    command = ["qemu-system-arm", "-M", board_name, "-semihosting", "-nographic", "-icount", "shift=0",
               "-monitor", "none", "-serial", "none", "-kernel", str(elf)]
    per_sample = RUN_TIMEOUT_PER_SAMPLE + macc / SLOWEST_MACC_PER_SECOND
    return run_command(command, folder, f"running the generated code under QEMU {board_name}",
                       timeout=30 + per_sample * samples)


def instructions_from(output: str, ns_per_tick: float) -> list[int]:
    """Instructions per inference from the harness's ``mcu_ticks N`` lines."""
    return [int(round(int(ticks) * ns_per_tick)) for ticks in re.findall(r"^mcu_ticks (\d+)", output, re.M)]


def layer_instructions_from(output: str, ns_per_tick: float, layers: int) -> list[list[int]]:
    """Instructions per layer of every inference from ``mcu_layer_ticks I N`` lines."""
    values = [int(round(int(ticks) * ns_per_tick))
              for _, ticks in re.findall(r"^mcu_layer_ticks (\d+) (\d+)", output, re.M)]
    return [values[start:start + layers] for start in range(0, len(values), layers)] if layers else []


def run_qemu(deployment: Deployment, feeds: dict[str, np.ndarray], engine: str, *, keep: Path | None = None,
             profile: bool = False) -> CRunResult:
    """Generate, cross-compile and run on the emulated board of ``engine`` (batched feeds).
    ``profile``: also count instructions per layer (a second build with the per-layer hook;
    the per-inference counts come from the build without it)."""
    require_toolchain(engine)
    board = board_of(engine)
    graph = deployment.graph
    with work_folder(keep) as folder:
        with phase(f"generating and cross-compiling the code for {board.name}"):
            project = generate_for_run(deployment, folder / "project")
            elf = build_board_fitting(project, board)
        count = write_samples(graph, feeds, folder / "inputs.bin")
        macc = sum(node_macc(node) for node in graph.nodes)
        with phase(f"running {count} sample(s) on QEMU {board.name}"):
            output = run_elf(elf, board.name, folder, count, macc)
        outputs = read_outputs(graph, folder / "outputs.bin", count)
        result = CRunResult(outputs, instructions_from(output, board.ns_per_tick),
                            project=project if keep is not None else None)
        if profile:
            with phase(f"counting instructions per layer on QEMU {board.name}"):
                profiled = run_elf(build_board(project, board.name, profile=True), board.name, folder, count, macc)
            layers = len(deployment.plan.order) - len(deployment.plan.elided_nodes)
            result.layer_instructions = layer_instructions_from(profiled, board.ns_per_tick, layers)
        return result
