"""Run the generated C code on the host: generate the project, build its harness
(``harness_main.c``) with the host compiler, feed it the samples through a file and read
the outputs back.

Input: a :class:`~mcudeploy.deployment.Deployment` (the same record ``generate`` writes
code for: its graph, plan, regions and kernel variants) and batched feeds (every array
``(N, *declared shape)``). Output: the outputs by name, ``(N, *declared shape)``, exactly as
the C code computed them (compare them bit for bit with
:func:`~mcudeploy.reference.int_executor.run_int`).

Sample file format (the harness's): per sample every input's bytes in graph order,
little-endian; the outputs file holds per sample every output's bytes in graph order.
:mod:`.qemu` runs the same project on the Cortex-M boards.
"""
from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from ..codegen import ProjectOptions, generate_files, write_project
from ..errors import McuDeployError, UsageError
from ..ir import Graph
from ..progress import phase
from ..reference.int_executor import check_int_feeds, run_int

if TYPE_CHECKING:
    from ..deployment import Deployment

log = logging.getLogger(__name__)
BUILD_TIMEOUT = 600


class CodegenRunError(McuDeployError):
    """Building or running the generated C code failed (compiler, QEMU or the harness)."""


@dataclass
class CRunResult:
    outputs: dict[str, np.ndarray]
    instructions: list[int] = field(default_factory=list)   # per inference (QEMU only)
    project: Path | None = None
    layer_instructions: list[list[int]] = field(default_factory=list)   # per inference, per layer
    cycles: list[int] = field(default_factory=list)   # per inference, counted by a board (serial)
    timer: str = ""                                   # what counted them: DWT or SysTick


def generate_for_run(deployment: Deployment, folder: Path) -> Path:
    """Write the generated project of ``deployment`` into ``folder`` (replacing an earlier one)."""
    write_project(generate_files(deployment, ProjectOptions()), folder, force=True)
    return folder


def write_samples(graph: Graph, feeds: dict[str, np.ndarray], path: Path) -> int:
    """The harness's input file; the number of samples."""
    arrays = check_int_feeds(graph, feeds, batch=True)
    count = next(iter(arrays.values())).shape[0] if arrays else 1
    with open(path, "wb") as handle:
        for index in range(count):
            for value in graph.inputs:
                little = np.dtype(value.dtype.numpy).newbyteorder("<")
                handle.write(np.ascontiguousarray(arrays[value.name][index], dtype=little).tobytes())
    return count


def read_outputs(graph: Graph, path: Path | bytes, count: int) -> dict[str, np.ndarray]:
    """Split the harness's output file (or its bytes) into ``(count, *shape)`` arrays by output name."""
    data = path if isinstance(path, bytes) else path.read_bytes()
    per_sample = sum(v.nbytes for v in graph.outputs)
    if len(data) != per_sample * count:
        raise CodegenRunError(f"the generated code wrote {len(data)} bytes of outputs, expected "
                              f"{count} samples x {per_sample} bytes")
    outputs, offset = {}, 0
    rows = np.frombuffer(data, dtype=np.uint8).reshape(count, per_sample)
    for value in graph.outputs:
        little = np.dtype(value.dtype.numpy).newbyteorder("<")
        chunk = np.ascontiguousarray(rows[:, offset:offset + value.nbytes])
        outputs[value.name] = chunk.view(little).astype(value.dtype.numpy).reshape((count, *value.shape))
        offset += value.nbytes
    return outputs


def run_command(command: list[str], folder: Path, what: str, timeout: float = BUILD_TIMEOUT) -> str:
    """Run ``command`` in ``folder``; :class:`CodegenRunError` with its output on failure."""
    try:
        result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CodegenRunError(f"{what} did not finish within {timeout:g} s ({' '.join(command)})") from None
    except FileNotFoundError:
        raise CodegenRunError(f"{what}: {command[0]} is not installed") from None
    if result.returncode != 0:
        raise CodegenRunError(f"{what} failed (exit {result.returncode}) in {folder}:\n"
                              f"{(result.stdout + result.stderr)[-4000:]}")
    return result.stdout


@contextmanager
def work_folder(keep: Path | None = None) -> Iterator[Path]:
    """``keep`` (created), or a temporary folder removed afterwards."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    folder = Path(tempfile.mkdtemp(prefix="mcudeploy-c-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def build_host(project: Path, *, sanitize: bool = False) -> Path:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        raise UsageError("no host C compiler (cc / gcc) found; install gcc (apt-get install gcc)")
    run_command(["make", "-s", f"SANITIZE={int(sanitize)}"], project, "building the generated code on the host")
    return project / "build" / ("host-sanitize" if sanitize else "host") / "network_harness"


def run_host(deployment: Deployment, feeds: dict[str, np.ndarray], *, sanitize: bool = False,
             keep: Path | None = None) -> CRunResult:
    """Generate, build with the host compiler and run on ``feeds`` (batched)."""
    graph = deployment.graph
    with work_folder(keep) as folder:
        with phase("generating and compiling the code on the host"):
            project = generate_for_run(deployment, folder / "project")
            program = build_host(project, sanitize=sanitize)
        count = write_samples(graph, feeds, folder / "inputs.bin")
        with phase(f"running {count} sample(s) of the generated code on the host"):
            run_command([str(program), str(folder / "inputs.bin"), str(folder / "outputs.bin")], folder,
                        "running the generated code on the host")
        return CRunResult(read_outputs(graph, folder / "outputs.bin", count),
                          project=project if keep is not None else None)


@dataclass
class GeneratedCodeCheck:
    """The generated code on ``on`` against the integer reference, over ``samples`` samples."""
    on: str
    samples: int
    mismatches: dict[str, int]           # output name -> samples whose bytes differ
    instructions: list[int] = field(default_factory=list)
    layer_instructions: list[list[int]] = field(default_factory=list)   # per sample, per layer
    cycles: list[int] = field(default_factory=list)   # per sample, counted by the board (serial)
    timer: str = ""

    @property
    def bit_exact(self) -> bool:
        return not any(self.mismatches.values())

    def describe(self) -> str:
        verdict = ("bit-exact" if self.bit_exact else "MISMATCH: " + ", ".join(
            f"{name} differs in {count} of {self.samples} samples" for name, count in self.mismatches.items() if count))
        text = f"generated C code on {self.on}: {verdict} against the integer reference ({self.samples} samples)"
        if self.instructions:
            text += (f"; {int(np.mean(self.instructions))} instructions per inference "
                     f"(min {min(self.instructions)}, max {max(self.instructions)})")
        if self.cycles:
            text += (f"; {int(np.mean(self.cycles))} cycles per inference ({self.timer}; "
                     f"min {min(self.cycles)}, max {max(self.cycles)})")
        return text


def compare_with_reference(deployment: Deployment, feeds: dict[str, np.ndarray], on: str,
                           result: CRunResult) -> GeneratedCodeCheck:
    """Compare every output byte of ``result`` with
    :func:`~mcudeploy.reference.int_executor.run_int` on the same feeds."""
    graph = deployment.graph
    reference = run_int(graph, feeds, batch=True)
    mismatches = {}
    for value in graph.outputs:
        got, want = result.outputs[value.name], np.asarray(reference[value.name])
        mismatches[value.name] = int(np.sum(np.any((got != want).reshape(len(got), -1), axis=1)))
    return GeneratedCodeCheck(on, len(next(iter(result.outputs.values()))), mismatches, result.instructions,
                              result.layer_instructions, result.cycles, result.timer)
