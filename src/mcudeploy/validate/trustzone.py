"""Run a deployment's TrustZone build under QEMU ``mps3-an547`` (Cortex-M55 with TrustZone):
the secure image boots, partitions the memory (SAU) and starts the non-secure harness, which
calls the network through its secure gateway veneer (:mod:`mcudeploy.codegen.trustzone`).

    check_trustzone(deployment, feeds) -> TrustZoneCheck   (bit-exact + refusals)

Steps: generate the project with ``trustzone=True``, ``make BOARD=mps3-an547 TRUSTZONE=1``
(secure.elf, its import library veneers.o, ns.elf), write the samples (the harness format of
:mod:`.c_runner`), run ``qemu-system-arm -M mps3-an547 -semihosting -icount shift=0 -kernel
secure.elf -device loader,file=ns.elf`` (the generic loader puts the non-secure ELF at its own
addresses; the secure reset code finds its vector table there), read the outputs back.

The harness then calls the entry with pointers it must refuse and prints each status
(``mcu_secure_check NAME STATUS``); :data:`EXPECTED_CHECKS` is what ``harness_ns.c`` asks,
and ``mcu_sau_ctrl_seen 0`` shows it ran non-secure (the SAU registers read as zero there).
QEMU's exit status does not carry the program's, so every verdict comes from those lines; a
fault (``mcu_fault ...``, printed by the secure fault handler) or a missing line is a
:class:`~.c_runner.CodegenRunError` quoting the output.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..codegen import ProjectOptions, generate_files, write_project
from ..codegen.trustzone import AN547_LAYOUT
from .c_runner import (
    CodegenRunError,
    CRunResult,
    GeneratedCodeCheck,
    compare_with_reference,
    read_outputs,
    run_command,
    work_folder,
    write_samples,
)
from .qemu import RUN_TIMEOUT_PER_SAMPLE, board_of, instructions_from, require_toolchain

if TYPE_CHECKING:
    from ..deployment import Deployment

TRUSTZONE_ENGINE = "qemu-m55"          # the toolchain check and board of this runner
BOARD = AN547_LAYOUT.board
NETWORK_SECURE_ERROR_POINTER, NETWORK_SECURE_ERROR_SIZE = -2, -3   # network_ns.h
EXPECTED_CHECKS = {"input_secure_alias": NETWORK_SECURE_ERROR_POINTER,
                   "output_secure_alias": NETWORK_SECURE_ERROR_POINTER,
                   "input_nonsecure_alias": NETWORK_SECURE_ERROR_POINTER,
                   "input_crosses_region_end": NETWORK_SECURE_ERROR_POINTER,
                   "wrong_size": NETWORK_SECURE_ERROR_SIZE, "valid": 0}


@dataclass
class TrustZoneRun:
    """What the non-secure harness reported."""
    outputs: dict[str, np.ndarray]
    instructions: list[int]                 # per call, the secure gateway and copies included
    checks: dict[str, int]                  # refusal check -> status the entry returned
    sau_ctrl_seen: int | None               # SAU_CTRL as the harness read it (0: non-secure)
    console: str = ""
    project: Path | None = None


@dataclass
class TrustZoneCheck:
    """The TrustZone build against the integer reference, and the refusals."""
    code: GeneratedCodeCheck
    checks: dict[str, int]
    sau_ctrl_seen: int | None
    wrong_checks: dict[str, int | None] = field(default_factory=dict)   # name -> status where it differs (None: absent)

    @property
    def passed(self) -> bool:
        return self.code.bit_exact and not self.wrong_checks and self.sau_ctrl_seen == 0

    def describe(self) -> str:
        refused = sum(1 for name, status in self.checks.items() if status < 0 and name not in self.wrong_checks)
        text = (f"{self.code.describe()}; {refused} of {sum(1 for s in EXPECTED_CHECKS.values() if s < 0)} "
                "bad calls refused")
        if self.wrong_checks:
            text += "; WRONG: " + ", ".join(f"{name} returned {status}, expected {EXPECTED_CHECKS.get(name)}"
                                            for name, status in self.wrong_checks.items())
        if self.sau_ctrl_seen != 0:
            text += f"; the harness saw SAU_CTRL = {self.sau_ctrl_seen} (it did not run non-secure)"
        return text


def build_trustzone(project: Path) -> Path:
    """``make BOARD=mps3-an547 TRUSTZONE=1`` in ``project``; the build folder."""
    run_command(["make", "-s", f"BOARD={BOARD}", "TRUSTZONE=1"], project,
                f"building the TrustZone images for {BOARD}")
    return project / "build" / f"{BOARD}-trustzone"


def run_images(build: Path, folder: Path, samples: int, *, nonsecure: bool = True) -> str:
    """Boot ``secure.elf`` (with ``ns.elf`` loaded unless not ``nonsecure``) in ``folder``, where
    the semihosting files are; the console: standard output and error together (QEMU writes the
    secure side's SYS_WRITE0 lines to its standard error)."""
    command = ["qemu-system-arm", "-M", BOARD, "-semihosting", "-nographic", "-icount", "shift=0",
               "-monitor", "none", "-serial", "none", "-kernel", str(build / "secure.elf")]
    if nonsecure:
        command += ["-device", f"loader,file={build / 'ns.elf'}"]
    timeout = 30 + RUN_TIMEOUT_PER_SAMPLE * samples
    try:
        result = subprocess.run(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CodegenRunError(f"the TrustZone images did not finish within {timeout:g} s under QEMU {BOARD} "
                              f"({' '.join(command)})") from None
    if result.returncode != 0:
        raise CodegenRunError(f"QEMU {BOARD} failed (exit {result.returncode}) in {folder}:\n{result.stdout[-4000:]}")
    return result.stdout


def _parse(console: str, samples: int) -> tuple[dict[str, int], int | None]:
    fault = re.search(r"^mcu_(fault|secure_error) .*$", console, re.M)
    if fault:
        raise CodegenRunError(f"the TrustZone images stopped: {fault.group(0)}\n{console[-2000:]}")
    done = re.search(r"^mcu_samples (\d+)", console, re.M)
    if done is None or int(done.group(1)) != samples:
        raise CodegenRunError(f"the non-secure harness did not finish its {samples} sample(s):\n{console[-2000:]}")
    checks = {name: int(status) for name, status in re.findall(r"^mcu_secure_check (\w+) (-?\d+)", console, re.M)}
    seen = re.search(r"^mcu_sau_ctrl_seen (\d+)", console, re.M)
    return checks, int(seen.group(1)) if seen else None


def run_trustzone(deployment: Deployment, feeds: dict[str, np.ndarray], *, keep: Path | None = None) -> TrustZoneRun:
    """Generate, build and run the TrustZone images on ``feeds`` (batched; module docstring)."""
    require_toolchain(TRUSTZONE_ENGINE)
    graph = deployment.graph
    with work_folder(keep) as folder:
        project = folder / "project"
        write_project(generate_files(deployment, ProjectOptions(trustzone=True)), project, force=True)
        build = build_trustzone(project)
        count = write_samples(graph, feeds, folder / "inputs.bin")
        console = run_images(build, folder, count)
        checks, seen = _parse(console, count)
        return TrustZoneRun(read_outputs(graph, folder / "outputs.bin", count),
                            instructions_from(console, board_of(TRUSTZONE_ENGINE).ns_per_tick), checks, seen,
                            console, project if keep is not None else None)


def check_trustzone(deployment: Deployment, feeds: dict[str, np.ndarray], *, keep: Path | None = None) -> TrustZoneCheck:
    """Run the TrustZone images and compare every output byte with ``run_int``; check every refusal."""
    result = run_trustzone(deployment, feeds, keep=keep)
    code = compare_with_reference(deployment, feeds, f"{BOARD} (TrustZone, non-secure caller)",
                                  CRunResult(result.outputs, result.instructions))
    wrong = {name: result.checks.get(name) for name, status in EXPECTED_CHECKS.items()
             if result.checks.get(name) != status}
    return TrustZoneCheck(code, result.checks, result.sau_ctrl_seen, wrong)
