"""Does the estimator rank a tiled (mostly on-chip) U-Net like the code runs? (issue 21)

    python benchmarks/estimate_rank_bench.py [--size 256] [--out FILE.md]

Model: ``tools/make_unet.py`` U-Net (nearest up-sampling, skips from 32 channels), quantized as
a user does: ``mcudeploy quantize unetN.onnx --calib one.npy -o unetN_int8.onnx --int8-io``
(one standard-normal sample, seed 0). Target ``stm32n6``, weights in flash. Configurations:

* **tiled + split**: every U-Net level tiled (``TILES``: the hand configuration of
  ``benchmarks/tiling_bench.py`` with tiles halved per halving of the size), every level's
  output spilled to hyperRAM (``[split] points``): a small on-chip arena, tile stripes loaded
  from hyperRAM by their Slices;
* **levels (automatic)**: ``[split] levels``, the tiling and cuts mcudeploy chooses itself
  (``plan/levels.py``);
* **psram**: untiled, the whole arena in hyperRAM (``[memory] external_activations``).

Per configuration: the estimate as deployed (NPU epochs + CPU), and the same deployment with
every node forced on the CPU (``force_cpu``: what the generated C code runs, which QEMU
emulates) - its estimated CPU instructions against the instructions QEMU Cortex-M55 counts
for one inference of the generated code (``validate.generated_code.run_generated``), with the
outputs compared byte for byte against the integer reference. QEMU counts instructions, not
memory wait states, so it ranks the configurations by instructions; the estimate's latency
adds the wait states of where each byte lives (hyperRAM), which QEMU cannot check.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS, git_commit

sys.path.insert(0, str(REPO / "tools"))

from mcudeploy.driver import deploy, deployable_graph, load_graph  # noqa: E402
from mcudeploy.estimate import estimate  # noqa: E402
from mcudeploy.options import DeploymentOptions, TilingRegion  # noqa: E402

LEVELS = [("conv_3", "maxpool_9"), ("conv_12", "maxpool_18"), ("conv_21", "maxpool_27"), ("conv_30", "conv_34"),
          ("resize_37", "conv_45"), ("resize_48", "conv_56"), ("resize_59", "conv_71_1")]
TILES = {512: (32, 16, 8, 8, 16, 32, (32, 4)), 256: (16, 8, 4, 4, 8, 16, (16, 4)),
         128: (8, 4, 2, 2, 4, 8, (8, 4)), 64: (4, 2, 2, 2, 2, 4, (4, 2))}


def quantized_unet(size: int, folder: Path):
    import onnx

    from make_unet import make_unet
    model, calib, out = folder / f"unet{size}.onnx", folder / "calib.npy", folder / f"unet{size}_int8.onnx"
    onnx.save(make_unet(size), model)
    np.save(calib, np.random.default_rng(0).standard_normal((1, 1, size, size)).astype(np.float32))
    subprocess.run([sys.executable, "-m", "mcudeploy", "quantize", str(model), "--calib", str(calib), "-o", str(out),
                    "--int8-io", "--no-record"], check=True, capture_output=True)
    return deployable_graph(load_graph(out))


def configurations(size: int) -> dict[str, dict]:
    regions = tuple(TilingRegion(start, end, *(tiles if isinstance(tiles, tuple) else (tiles,)))
                    for (start, end), tiles in zip(LEVELS, TILES[size]))
    return {"tiled + split": dict(external_activations=False, tiling_regions=regions,
                                  split_points=tuple(end for _, end in LEVELS[:-1])),
            "levels (automatic)": dict(external_activations=False, split_levels=True),
            "psram": dict(external_activations=True)}


def measure(graph, extra: dict, feeds: dict, expected: dict) -> dict:
    from mcudeploy.validate import qemu
    from mcudeploy.validate.generated_code import run_generated
    qemu.RUN_TIMEOUT_PER_SAMPLE = 4 * 3600.0
    options = DeploymentOptions(target="stm32n6", weights="flash", **extra)
    deployed = deploy(graph.copy(), options)
    as_deployed = estimate(deployed)
    on_cpu = deploy(graph.copy(), dataclasses.replace(options, force_cpu=tuple(n.name for n in deployed.graph.nodes)))
    cpu = estimate(on_cpu)
    started = time.perf_counter()
    result = run_generated(on_cpu, feeds, "qemu-m55")
    unknown = sorted({layer.op for layer in cpu.layers if not layer.known})
    return {"fits": deployed.fits, "on_chip": deployed.plan.arena_bytes, "external": deployed.plan.external_bytes,
            "arena_region": deployed.plan.placement.arena_region, "latency_ms": round(as_deployed.latency_ms, 3),
            "hyperram_bytes": sum(layer.bytes_moved.get("hyperRAM", 0) for layer in as_deployed.layers),
            "cpu_latency_ms": round(cpu.latency_ms, 1), "cpu_instructions": round(cpu.cpu_instructions),
            "unknown_ops": unknown, "qemu_instructions": result.instructions[0],
            "instruction_error": round(cpu.cpu_instructions / result.instructions[0] - 1.0, 4),
            "bit_exact": all(np.array_equal(result.outputs[name], array) for name, array in expected.items()),
            "qemu_seconds": round(time.perf_counter() - started, 1)}


def machine() -> str:
    """Versions, commit and load: what the figures were measured with."""
    import os
    import platform
    commit = git_commit()
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"commit {commit or 'unknown'}, Python {platform.python_version()}, numpy {np.__version__}, "
            f"{qemu[0] if qemu else 'QEMU unknown'}; {os.cpu_count()} cores, load average {load} at the end")


def markdown(size: int, rows: dict[str, dict], command: str) -> str:
    lines = [f"# Estimate vs QEMU Cortex-M55: tiled vs PSRAM U-Net {size} on stm32n6", "",
             f"Made by `{command}` (method in the script's docstring). Figures per configuration; "
             "errors = estimate / QEMU - 1.", "", machine(), "",
             "| configuration | fits | on-chip arena B | external B | estimate as deployed ms | hyperRAM bytes moved "
             "| CPU-only estimate ms | estimated instructions | QEMU M55 instructions | error | bit-exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['fits']} | {r['on_chip']} ({r['arena_region']}) | {r['external']} | "
                     f"{r['latency_ms']} | {r['hyperram_bytes']} | {r['cpu_latency_ms']} | {r['cpu_instructions']} | "
                     f"{r['qemu_instructions']} | {100 * r['instruction_error']:+.1f} % | {r['bit_exact']} |")
    by_qemu = sorted(rows, key=lambda name: rows[name]["qemu_instructions"])
    by_instructions = sorted(rows, key=lambda name: rows[name]["cpu_instructions"])
    by_latency = sorted(rows, key=lambda name: rows[name]["latency_ms"])
    unknown = sorted({op for r in rows.values() for op in r["unknown_ops"]})
    lines += ["", f"- by QEMU instructions, fewest first: **{' < '.join(by_qemu)}**; by the estimated instructions: "
              f"**{' < '.join(by_instructions)}** ({'same ranking' if by_qemu == by_instructions else 'DIFFERENT ranking'})",
              f"- by the estimate as deployed (hyperRAM and flash wait states, which QEMU does not emulate), fastest "
              f"first: **{' < '.join(by_latency)}**",
              f"- layers without an instruction model on the M55 (counted as 0 in the estimate, part of the error): "
              f"{', '.join(unknown) or 'none'}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, choices=sorted(TILES))
    parser.add_argument("--out", type=Path, default=RESULTS / "estimate_rank.md")
    arguments = parser.parse_args()
    from mcudeploy.reference import run_int
    with tempfile.TemporaryDirectory() as folder:
        graph = quantized_unet(arguments.size, Path(folder))
    rng = np.random.default_rng(0)
    feeds = {v.name: rng.integers(-128, 128, (1, *v.shape)).astype(np.int8) for v in graph.inputs}
    expected = run_int(graph, feeds, batch=True)
    rows = {name: measure(graph, extra, feeds, expected) for name, extra in configurations(arguments.size).items()}
    command = "python benchmarks/estimate_rank_bench.py" + (f" --size {arguments.size}" if arguments.size != 256 else "")
    arguments.out.write_text(markdown(arguments.size, rows, command), encoding="utf-8")
    arguments.out.with_suffix(".json").write_text(json.dumps({"command": command, "size": arguments.size,
                                                              "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(arguments.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
