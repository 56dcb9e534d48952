"""Benchmark: the generated C code of every full-integer shared model, on the host and on
QEMU Cortex-M4 (mps2-an386) and Cortex-M55 (mps3-an547), against the integer reference.

Run ``python benchmarks/codegen_bench.py [--samples 5]`` (about two minutes). Writes
``benchmarks/results/codegen.md``.

Per model: ``--samples`` seeded random int8 inputs; the generated project runs them on the
host (gcc -O2), on QEMU M4 and on QEMU M55 (-O2, semihosting), and every output byte is
compared with ``run_int``. Instructions per inference come from the harness's SysTick under
``-icount shift=0`` (1 ns of virtual time per executed instruction; resolution 40 / 31.25
instructions): the mean over the samples (min-max spread shown; it is data-dependent
branching only, the count of one input is repeatable). Sizes: ``size_report`` for
Cortex-M4 at -Os, linked with --gc-sections: runtime code = Flash without the weights;
RAM beyond the arena = static RAM outside the arena + worst-case stack of network_run.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from paths import INT8_MODELS, RESULTS, SHARED  # noqa: E402

MODELS = INT8_MODELS

from mcudeploy.codegen import ProjectOptions, generate_files, write_project  # noqa: E402
from mcudeploy.driver import deploy  # noqa: E402
from mcudeploy.ir import get_op  # noqa: E402
from mcudeploy.validate.generated_code import check_generated_code  # noqa: E402
from mcudeploy.validate.size_report import size_report  # noqa: E402


def random_feeds(graph, count: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {v.name: rng.integers(-128, 128, (count, *v.shape)).astype(v.dtype.numpy) for v in graph.inputs}


def measure(path: Path, samples: int) -> dict:
    deployment = deploy(path)
    graph = deployment.graph
    feeds = random_feeds(graph, samples)
    row = {"model": path.name, "macc": sum(int(get_op(n.op).macc(n)) for n in graph.nodes)}
    for on in ("host", "qemu-m4", "qemu-m55"):
        check = check_generated_code(deployment, feeds, on)
        row[on] = check.bit_exact
        if check.instructions:
            row[f"{on} instructions"] = check.instructions
    with tempfile.TemporaryDirectory() as folder:
        write_project(generate_files(deployment, ProjectOptions()), Path(folder))
        row["size"] = size_report(Path(folder), "cortex-m4")
    return row


def _instructions(values: list[int]) -> str:
    mean = int(np.mean(values))
    return f"{mean:,} ({min(values):,}-{max(values):,})" if min(values) != max(values) else f"{mean:,}"


def write_markdown(rows: list[dict], samples: int) -> str:
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = ["# Generated C code: bit-exactness, instructions per inference, sizes", "",
             f"`python benchmarks/codegen_bench.py --samples {samples}` on {platform.machine()} "
             f"({os.cpu_count()} CPUs); {gcc}; {qemu}. {samples} seeded random int8 inputs per model; every "
             "output byte compared with the integer reference executor `run_int` (bit-exact with TFLite Micro, "
             "see int_executor.md).", "",
             "Instructions per inference: QEMU `-icount shift=0` (1 ns per executed instruction) read through "
             "SysTick around `network_run` (resolution 40 / 31.25 instructions); mean over the inputs, "
             "(min-max) when inputs differ. Reference kernels (plain C loops, no CMSIS-NN / Helium), -O2.", "",
             "| model | MACC | host | QEMU M4 | QEMU M55 | M4 instructions | M55 instructions | M4 instr / MACC |",
             "|---|---:|:---:|:---:|:---:|---:|---:|---:|"]
    for row in rows:
        flags = ["bit-exact" if row[on] else "**MISMATCH**" for on in ("host", "qemu-m4", "qemu-m55")]
        m4, m55 = row["qemu-m4 instructions"], row["qemu-m55 instructions"]
        lines.append(f"| {row['model']} | {row['macc']:,} | {' | '.join(flags)} | {_instructions(m4)} | "
                     f"{_instructions(m55)} | {np.mean(m4) / max(row['macc'], 1):.1f} |")
    lines += ["", "Sizes for Cortex-M4 at -Os (`mcudeploy generate --size-report --core cortex-m4`; linked with "
              "--gc-sections, bytes). Goals: runtime code <= 16 KB of flash; RAM beyond the arena <= 1 KB "
              "(TFLite Micro's persistent tail is 6.8 KB for ResNet-8).", "",
              "| model | runtime code (flash, no weights) | weights (flash) | arena | static RAM outside arena | "
              "stack (network_run, worst path) | RAM beyond arena | goals |",
              "|---|---:|---:|---:|---:|---:|---:|:---:|"]
    for row in rows:
        size = row["size"]
        static = size.total("ram") - size.arena_bytes
        ok = size.runtime_code_bytes <= 16384 and size.ram_beyond_arena <= 1024
        lines.append(f"| {row['model']} | {size.runtime_code_bytes:,} | {size.total('flash') - size.runtime_code_bytes:,}"
                     f" | {size.arena_bytes:,} | {static} | {size.stack_bytes} | {size.ram_beyond_arena} | "
                     f"{'met' if ok else '**missed**'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    rows = []
    for model in MODELS:
        rows.append(measure(SHARED / "models" / model, args.samples))
        logging.warning("%s done", model)
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = write_markdown(rows, args.samples)
    (RESULTS / "codegen.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
