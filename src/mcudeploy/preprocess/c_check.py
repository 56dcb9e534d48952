"""Build and run the generated ``preprocess.c`` with its check driver on the host (``cc``) or a
QEMU board (arm-none-eabi-gcc, semihosting): the frame in, the model input and the SysTick
ticks of one frame out (instructions = ticks * the board's ``ns_per_tick`` under
``-icount shift=0``, as :mod:`mcudeploy.validate.qemu`).
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from ..codegen.boards import BOARDS, CORE_FLAGS
from ..codegen.templates import render
from ..errors import UsageError

TEMPLATES = Path(__file__).resolve().parent.parent / "codegen" / "templates"
FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-ffp-contract=off", "-I."]


def _run(command: list[str], folder: Path, what: str, timeout: float = 120.0) -> str:
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise UsageError(f"{what}: {command[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{what}: no result after {timeout:g} s") from None
    if done.returncode != 0:
        raise UsageError(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:2000]}")
    return done.stdout


def _firmware(folder: Path, board_name: str) -> list[str]:
    board = BOARDS[board_name]
    (folder / "startup.c").write_text((TEMPLATES / "boards" / "startup_cortex_m.c").read_text())
    (folder / "board.ld").write_text(render("boards/board.ld.j2", {**board.__dict__, "board": board.name}))
    return ["arm-none-eabi-gcc", *FLAGS, *CORE_FLAGS[board.core].split(), "-DMCU_HARNESS_SYSTICK",
            "preprocess.c", "preprocess_check.c", "startup.c", "--specs=rdimon.specs", "-nostartfiles",
            "-T", "board.ld", "-Wl,--gc-sections", "-o", "check.elf"]


def run_preprocess_c(files: dict[str, str], frame: bytes, board: str | None = None) -> tuple[bytes, int | None]:
    """The input bytes ``preprocess_frame`` writes for ``frame``, and the instructions it took
    on ``board`` (None on the host)."""
    with tempfile.TemporaryDirectory(prefix="mcudeploy-preprocess-") as name:
        folder = Path(name)
        for file_name, text in files.items():
            (folder / file_name).write_text(text)
        (folder / "preprocess_check.c").write_text((TEMPLATES / "preprocess" / "preprocess_check.c").read_text())
        (folder / "frame.bin").write_bytes(frame)
        if board is None:
            _run(["cc", *FLAGS, "preprocess.c", "preprocess_check.c", "-o", "check"], folder, "compiling preprocess.c")
            _run(["./check"], folder, "running preprocess.c on the host")
            return (folder / "input.bin").read_bytes(), None
        _run(_firmware(folder, board), folder, f"cross-compiling preprocess.c for {board}")
        output = _run(["qemu-system-arm", "-M", board, "-semihosting", "-nographic", "-icount", "shift=0",
                       "-monitor", "none", "-serial", "none", "-kernel", "check.elf"], folder,
                      f"running preprocess.c under QEMU {board}")
        ticks = re.search(r"mcu_ticks (\d+)", output)
        instructions = int(round(int(ticks.group(1)) * BOARDS[board].ns_per_tick)) if ticks else None
        return (folder / "input.bin").read_bytes(), instructions
