"""Design-space sweeps (issue 14): scaling over local Dask workers, the engine's per-cell overhead,
and a U-Net resolution sweep on the STM32N6.

    python benchmarks/sweep_bench.py [--sections scaling control overhead unet] [--unet-int8 [STOP]] [--workers 1 2]

1. **scaling**: the same 48-cell plan + estimate sweep (the 8 shared full-integer models x
   ``stm32h743`` / ``stm32n6`` x 3 option sets) on 1 and 2 in-process LocalCluster workers, each
   run from scratch into a fresh run store (recording included); wall time side by side, and the
   sum of the cells' own compute time (measured inside the cell processes).
2. **overhead**: 200 empty cells (no stage: the cell process answers at once) on 1 and 2
   workers: the engine's cost per cell (submit, data by hash, the cell process round trip, the
   result, the run written to the store) = wall time x workers / cells, after a start-up
   measured on its own (LocalCluster + the cell processes' imports).
3. **unet**: ``tools/make_unet.py`` as the sweep's model generator, ``size`` 128 to 512 in steps
   of 32 (13 cells), on ``stm32n6`` with ``external_activations = false`` (``--on-chip-only``),
   stages plan + estimate, **float** U-Nets (as generated): the arena, on-chip use, latency and
   the fit of each resolution, and the largest resolution that fits on chip. ``--unet-int8``
   adds a second series: quantized to int8 by the sweep's quantize stage on one random
   calibration input (byte sizes and latency do not depend on the ranges), with ``[tiling] auto``
   and ``split_arena`` (slow: minutes per cell), sizes 128 to ``STOP``.
4. **control**: the 48 cells of (1) as plain ``deploy`` + ``estimate`` calls in 1 and 2
   processes, without the engine: how the pipeline itself scales on this machine.

Results: ``benchmarks/results/sweep.md`` / ``.json``, ``sweep_unet.png`` (latency and memory
against resolution) and ``sweep_pareto.png`` (the 48-cell sweep's front).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from pathlib import Path

from mcudeploy.sweep import SweepSettings, load_sweep, run_sweep
from mcudeploy.sweep.plot import write_pareto_png
from paths import INT8_MODELS, REPO, RESULTS, SHARED_MODELS

log = logging.getLogger("sweep_bench")
MIB = 1024 * 1024
OPTION_SETS = ('[{name = "default"}, {name = "no-reuse", reuse = false}, '
               '{name = "reference-kernels", kernels = "reference"}]')


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def scaling_sweep(folder: Path) -> Path:
    models = ", ".join(f'"{model}"' for model in INT8_MODELS)
    return _write(folder, "scaling", f'''[sweep]
name = "scaling"
stages = ["plan", "estimate"]
metrics = ["arena_bytes", "on_chip_bytes", "flash_bytes", "fits", "latency_ms"]
models_root = "{SHARED_MODELS}"
[axes]
models = [{models}]
targets = ["stm32h743", "stm32n6"]
option_sets = {OPTION_SETS}
''')


def _run(path: Path, workers: int, folder: Path, **changes):
    spec = load_sweep(path)
    if changes:
        from dataclasses import replace
        spec = replace(spec, **changes)
    store = folder / f"runs-{path.stem}-{workers}-{time.monotonic_ns()}.sqlite"
    started = time.perf_counter()
    result = run_sweep(spec, SweepSettings(workers=workers, store=store, progress=False))
    return result, time.perf_counter() - started


def scaling(folder: Path, worker_counts: list[int]) -> dict:
    path = scaling_sweep(folder)
    rows, reference = [], None
    for workers in worker_counts:
        result, seconds = _run(path, workers, folder)
        compute = sum(r.seconds for r in result.results.values())
        rows.append({"workers": workers, "cells": len(result.results), "ok": result.counts()["ok"],
                     "wall_s": round(seconds, 2), "cell_compute_s": round(compute, 2)})
        figures = [{k: v for k, v in row.items() if k not in ("seconds", "run")} for row in result.rows()]
        rows[-1]["same_figures_as_first"] = reference is None or figures == reference
        reference = reference or figures
        if workers == worker_counts[-1]:
            write_pareto_png(result, RESULTS / "sweep_pareto.png")
            front = result.front()
    for row in rows:
        row["speedup"] = round(rows[0]["wall_s"] / row["wall_s"], 2)
    return {"rows": rows, "front": front.front, "not_measured": front.missing}


def _plain_cells(part: int, parts: int) -> float:
    """The scaling sweep's cells computed by plain deploy + estimate calls (no engine)."""
    from mcudeploy.driver import deploy
    from mcudeploy.estimate import estimate
    from mcudeploy.options import DeploymentOptions

    options = [{}, {"reuse": False}, {"kernels": "reference"}]
    cells = [(m, t, o) for m in INT8_MODELS for t in ("stm32h743", "stm32n6") for o in options]
    started = time.perf_counter()
    for model, target, values in cells[part::parts]:
        estimate(deploy(SHARED_MODELS / model, DeploymentOptions(target=target, **values)))
    return time.perf_counter() - started


def control(worker_counts: list[int]) -> dict:
    """The same 48 cells without the engine: one plain process, or N processes with 48 / N cells each."""
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    for workers in worker_counts:
        with ProcessPoolExecutor(workers) as pool:
            list(pool.map(_plain_cells, [0] * workers, [1] * workers))      # imports and first loads, not timed
            started = time.perf_counter()
            list(pool.map(_plain_cells, range(workers), [workers] * workers))
        rows.append({"processes": workers, "wall_s": round(time.perf_counter() - started, 2)})
    for row in rows:
        row["speedup"] = round(rows[0]["wall_s"] / row["wall_s"], 2)
    return {"rows": rows}


def overhead(folder: Path, worker_counts: list[int]) -> dict:
    sizes = ", ".join(str(4096 + 16 * index) for index in range(100))
    path = _write(folder, "empty", f'''[sweep]
name = "empty"
stages = ["plan"]
models_root = "{SHARED_MODELS}"
[axes]
models = ["mlperf_tiny/fc_autoencoder_int8.tflite"]
targets = ["stm32h743", "stm32n6"]
[axes.options]
stack = [{sizes}]
''')
    one = _write(folder, "one", path.read_text().replace(f"stack = [{sizes}]", "stack = [4096]")
                 .replace('targets = ["stm32h743", "stm32n6"]', 'targets = ["stm32h743"]'))
    rows = []
    for workers in worker_counts:
        _, startup = _run(one, workers, folder, stages=(), metrics=())
        result, seconds = _run(path, workers, folder, stages=(), metrics=())
        cells = len(result.results)
        rows.append({"workers": workers, "cells": cells, "startup_s": round(startup, 2), "wall_s": round(seconds, 2),
                     "per_cell_ms": round(1000 * (seconds - startup) * workers / cells, 1)})
    return {"rows": rows}


def unet_sweep(folder: Path, int8: bool, stop: int = 512) -> Path:
    series = "" if not int8 else '''quantization = ["int8"]
option_sets = [{name = "int8-tiling", tiling_auto = true, split_arena = true}]
'''
    stages = '["quantize", "plan", "estimate"]' if int8 else '["plan", "estimate"]'
    data = '[data]\ncalibration = "random"\ncalibration_samples = 1\n' if int8 else ""
    return _write(folder, "unet-int8" if int8 else "unet", f'''[sweep]
name = "unet-{'int8' if int8 else 'float'}"
stages = {stages}
metrics = ["arena_bytes", "on_chip_bytes", "external_bytes", "fits", "overflow_bytes", "latency_ms",
           "latency_known_ms", "unknown_layers"]
timeout = 1800
[axes]
targets = ["stm32n6"]
{series}[options]
external_activations = false
[[generators]]
callable = "{REPO}/tools/make_unet.py:make_unet"
name = "unet"
parameters = {{size = {{start = 128, stop = {stop}, step = 32}}}}
{data}''')


def unet(folder: Path, int8_stop: int | None, workers: int) -> dict:
    found = {}
    for kind in ("float", "int8") if int8_stop else ("float",):
        path = unet_sweep(folder, kind == "int8", int8_stop if kind == "int8" else 512)
        result, seconds = _run(path, workers, folder)
        rows = [{"size": int(row["model"].split("=")[1].rstrip(")")), **{k: row[k] for k in (
            "status", "arena_bytes", "on_chip_bytes", "fits", "overflow_bytes", "latency_ms", "latency_known_ms",
            "unknown_layers")}, "error": row["error"]}
            for row in result.rows()]
        fitting = [row["size"] for row in rows if row["fits"] == 1]
        found[kind] = {"rows": rows, "largest_fitting": max(fitting) if fitting else None, "wall_s": round(seconds, 1)}
    _unet_png(found)
    return found


def _unet_png(found: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, latency) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for kind, series in found.items():
        rows = [row for row in series["rows"] if row["status"] == "ok"]
        sizes = [row["size"] for row in rows]
        memory.plot(sizes, [row["arena_bytes"] / MIB for row in rows], "-o", label=f"{kind}: arena")
        complete = all(row["latency_ms"] is not None for row in rows)
        latency.plot(sizes, [row["latency_ms" if complete else "latency_known_ms"] for row in rows], "-o",
                     mfc=None if complete else "none",
                     label=kind if complete else f"{kind}: lower bound (layers without figures left out)")
        for row in rows:
            if row["fits"] == 1:
                memory.plot(row["size"], row["arena_bytes"] / MIB, "*", color="green", ms=14)
    memory.axhline(4.12, color="crimson", ls="--", label="on-chip SRAM (4.12 MiB)")
    memory.axhline(1.0, color="crimson", ls=":", label="largest bank (1 MiB)")
    memory.set(xlabel="input resolution (pixels, square)", ylabel="activation arena (MiB)", yscale="log",
               title="U-Net on stm32n6, on chip only (star: fits)")
    latency.set(xlabel="input resolution (pixels, square)", ylabel="estimated latency (ms)", yscale="log",
                title="estimated latency")
    for axes in (memory, latency):
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(RESULTS / "sweep_unet.png")
    plt.close(figure)


def _table(rows: list[dict]) -> list[str]:
    keys = list(rows[0])
    return ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)] + [
        "| " + " | ".join("-" if row[k] is None else f"{row[k]:,}" if isinstance(row[k], int) and not isinstance(
            row[k], bool) else f"{row[k]:.4g}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |"
        for row in rows]


def markdown(results: dict, command: str) -> str:
    lines = ["# Design-space sweeps (issue 14)", "", f"Made by `{command}` on this machine (2 cores; load average "
             f"{results.get('load_average_before')} before, {results.get('load_average_after')} after: other jobs "
             "shared the cores); figures from `benchmarks/results/sweep.json`.", ""]
    if "scaling" in results:
        lines += ["## Scaling: 48 cells (8 int8 models x 2 targets x 3 option sets), plan + estimate", "",
                  "Each run from scratch into a fresh run store; `cell_compute_s` is the sum of the cells' own time "
                  "inside the cell processes.", "", *_table(results["scaling"]["rows"]), "",
                  f"Pareto front (latency_ms, on_chip_bytes; {', '.join(results['scaling']['not_measured'])}: not "
                  f"measured): cells {results['scaling']['front']}; plot `sweep_pareto.png`.", ""]
    if "control" in results:
        lines += ["## Control: the same 48 cells without the engine", "",
                  "Plain `deploy()` + `estimate()` calls in 1 process, or in N processes with 48 / N cells each "
                  "(imports and first loads not timed): the pipeline's own scaling on this machine.", "",
                  *_table(results["control"]["rows"]), ""]
    if "overhead" in results:
        lines += ["## Engine overhead: empty cells (no stage)", "",
                  "`startup_s`: a one-cell sweep (LocalCluster, the cell processes' imports, one store write); "
                  "`per_cell_ms` = (wall - startup) x workers / cells.", "", *_table(results["overhead"]["rows"]), ""]
    for kind, series in results.get("unet", {}).items():
        sizes = [row["size"] for row in series["rows"]]
        lines += [f"## U-Net {kind}, {min(sizes)} to {max(sizes)} in steps of 32, stm32n6, external_activations = false",
                  "",
                  f"Largest resolution that fits on chip: **{series['largest_fitting'] or 'none'}** "
                  f"(sweep wall time {series['wall_s']} s).", "", *_table(series["rows"]), ""]
    if "unet" in results:
        lines += ["`latency_ms` only when every layer has figures in the estimator; else `latency_known_ms` sums "
                  "the layers that have them (a lower bound) and `unknown_layers` counts the others (the float "
                  "U-Net's Resize layers, the int8 U-Net's float input / output conversions). Curve: "
                  "`sweep_unet.png` (arena and latency against resolution).", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=["scaling", "control", "overhead", "unet"],
                        choices=["scaling", "control", "overhead", "unet"])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--unet-int8", type=int, metavar="STOP", nargs="?", const=512,
                        help="add the int8 + tiling U-Net series, 128 to STOP (default 512; slow: minutes per cell)")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    results: dict = {}
    output = RESULTS / "sweep.json"
    if output.exists():
        results = json.loads(output.read_text())
    results["load_average_before"] = [round(value, 2) for value in os.getloadavg()]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        if "scaling" in arguments.sections:
            results["scaling"] = scaling(folder, arguments.workers)
        if "control" in arguments.sections:
            results["control"] = control(arguments.workers)
        if "overhead" in arguments.sections:
            results["overhead"] = overhead(folder, arguments.workers)
        if "unet" in arguments.sections:
            results["unet"] = unet(folder, arguments.unet_int8, max(arguments.workers))
    results["load_average_after"] = [round(value, 2) for value in os.getloadavg()]
    output.write_text(json.dumps(results, indent=1) + "\n")
    (RESULTS / "sweep.md").write_text(markdown(results, "python benchmarks/sweep_bench.py --unet-int8 320"))
    log.info("wrote %s and %s", output, RESULTS / "sweep.md")

if __name__ == "__main__":
    main()
