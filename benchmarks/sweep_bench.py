"""Design-space sweeps (issue 14): scaling over local Dask workers, the engine's per-cell overhead,
and a U-Net resolution sweep on the STM32N6.

    python benchmarks/sweep_bench.py [--sections scaling scaling-search control overhead unet]
                                     [--workers 1 2] [--repeats 3] [--search-budget 8]
                                     [--unet-tiling-stop 224] [--tag NAME]

1. **scaling** / **scaling-search**: the same 48-cell plan + estimate sweep (the 8 shared
   full-integer models x ``stm32h743`` / ``stm32n6`` x 3 option sets) on 1 and 2 in-process LocalCluster workers, each
   run from scratch into a fresh run store (recording included), the worker counts interleaved
   ``--repeats`` times (the machine's load changes from minute to minute): wall time side by
   side, the sum of the cells' own time (inside the cell processes), the CPU seconds of the
   client process and of the cell processes, and the load average at each run.
2. **control**: the 48 cells of (1) as plain ``deploy`` + ``estimate`` calls in 1 and 2 worker
   processes, without the engine, the processes once in this script's session and once each
   in a session of its own: what the machine gives a second process (Linux shares the CPU
   between sessions first, ``kernel.sched_autogroup_enabled``).
3. **overhead**: 200 empty cells (no stage: the cell process answers at once) on 1 and 2
   workers: the engine's cost per cell (submit, data by hash, the cell process round trip, the
   result, the run written to the store) = (wall time - start-up) x workers / cells, the
   start-up (LocalCluster + the cell processes' imports) measured on its own.
4. **unet**: ``tools/make_unet.py`` as the sweep's model generator, ``size`` 128 to 512 in steps
   of 32, on ``stm32n6`` with ``external_activations = false`` (on chip only), in three series:
   **float** (plan + estimate of the model as generated); **int8** (the sweep's quantize stage,
   integer I/O, one random calibration input: byte sizes and latency do not depend on the
   ranges; ``split_arena``); **int8-tiling** (the same with ``[tiling] auto``; slow: minutes per
   cell, so 128 to ``--unet-tiling-stop``). The arena, on-chip use, latency, the fit of each
   resolution, and the largest resolution that fits on chip.

Results: ``benchmarks/results/sweep.md`` / ``.json`` (sections measured at different times keep
their own command and load average), ``sweep_unet.png`` (latency and memory against
resolution) and ``sweep_pareto.png`` (the 48-cell sweep's front).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
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


def scaling_sweep(folder: Path, search_budget: int | None = None) -> Path:
    """The 48 cells; with ``search_budget`` each cell also runs a compile-option search of that
    many trials (the same cells, about ``search_budget`` times the work)."""
    models = ", ".join(f'"{model}"' for model in INT8_MODELS)
    stages = '["plan", "estimate"]' if search_budget is None else '["plan", "estimate", "search"]'
    search = "" if search_budget is None else f"[search]\nbudget = {search_budget}\n"
    return _write(folder, "scaling" if search_budget is None else "scaling-search", f'''[sweep]
name = "scaling"
stages = {stages}
metrics = ["arena_bytes", "on_chip_bytes", "flash_bytes", "fits", "latency_ms"]
models_root = "{SHARED_MODELS}"
[axes]
models = [{models}]
targets = ["stm32h743", "stm32n6"]
option_sets = {OPTION_SETS}
{search}''')


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _run(path: Path, workers: int, folder: Path, **changes):
    spec = load_sweep(path)
    if changes:
        spec = replace(spec, **changes)
    store = folder / f"runs-{path.stem}-{workers}-{time.monotonic_ns()}.sqlite"
    started = time.perf_counter()
    result = run_sweep(spec, SweepSettings(workers=workers, store=store, progress=False))
    return result, time.perf_counter() - started


def _scaling_run(path: Path, workers: int, folder: Path) -> tuple[dict, object]:
    load = round(os.getloadavg()[0], 1)
    client, children = _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
    result, seconds = _run(path, workers, folder)      # the cell processes end (and are counted) with the sweep
    return {"workers": workers, "cells": len(result.results), "ok": result.counts()["ok"], "wall_s": round(seconds, 2),
            "cell_compute_s": round(sum(r.seconds for r in result.results.values()), 2),
            "client_cpu_s": round(_cpu_seconds(resource.RUSAGE_SELF) - client, 2),
            "cell_process_cpu_s": round(_cpu_seconds(resource.RUSAGE_CHILDREN) - children, 2),
            "load_1min": load}, result


def scaling(folder: Path, worker_counts: list[int], repeats: int, search_budget: int | None = None) -> dict:
    path = scaling_sweep(folder, search_budget)
    rows, reference = [], None
    for repeat in range(repeats):
        for workers in worker_counts:
            row, result = _scaling_run(path, workers, folder)
            figures = [{k: v for k, v in r.items() if k not in ("seconds", "run")} for r in result.rows()]
            row["same_figures_as_first"] = reference is None or figures == reference
            reference = reference or figures
            rows.append({"repeat": repeat + 1, **row})
            log.info("scaling: %s", rows[-1])
    write_pareto_png(result, RESULTS / "sweep_pareto.png")
    front = result.front()
    medians = {workers: statistics.median(r["wall_s"] for r in rows if r["workers"] == workers)
               for workers in worker_counts}
    summary = [{"workers": workers, "median_wall_s": round(wall, 2),
                "speedup_vs_1": round(medians[worker_counts[0]] / wall, 2)} for workers, wall in medians.items()]
    return {"rows": rows, "summary": summary, "front": front.front, "not_measured": front.missing}


def _plain_cells(part: int, parts: int) -> float:
    """The scaling sweep's cells computed by plain deploy + estimate calls (no engine)."""
    from mcudeploy.driver import deploy
    from mcudeploy.estimate import estimate
    from mcudeploy.options import DeploymentOptions

    logging.getLogger("mcudeploy").setLevel(logging.ERROR)      # the models' dynamic-batch notes, 48 times
    options = [{}, {"reuse": False}, {"kernels": "reference"}]
    cells = [(m, t, o) for m in INT8_MODELS for t in ("stm32h743", "stm32n6") for o in options]
    started = time.perf_counter()
    for model, target, values in cells[part::parts]:
        estimate(deploy(SHARED_MODELS / model, DeploymentOptions(target=target, **values)))
    return time.perf_counter() - started


def _own_session() -> None:
    os.setsid()


def control(worker_counts: list[int], repeats: int) -> dict:
    """The same 48 cells without the engine: N processes with 48 / N cells each, in this
    script's session or each in its own."""
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    for repeat in range(repeats):
        for session in ("shared", "own"):
            for workers in worker_counts:
                with ProcessPoolExecutor(workers, initializer=_own_session if session == "own" else None) as pool:
                    list(pool.map(_plain_cells, [0] * workers, [1] * workers))      # imports and first loads, not timed
                    load = round(os.getloadavg()[0], 1)
                    started = time.perf_counter()
                    list(pool.map(_plain_cells, range(workers), [workers] * workers))
                rows.append({"repeat": repeat + 1, "sessions": session, "processes": workers,
                             "wall_s": round(time.perf_counter() - started, 2), "load_1min": load})
                log.info("control: %s", rows[-1])
    summary = []
    for session in ("shared", "own"):
        medians = {w: statistics.median(r["wall_s"] for r in rows if r["processes"] == w and r["sessions"] == session)
                   for w in worker_counts}
        summary += [{"sessions": session, "processes": w, "median_wall_s": round(wall, 2),
                     "speedup_vs_1": round(medians[worker_counts[0]] / wall, 2)} for w, wall in medians.items()]
    return {"rows": rows, "summary": summary}


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


UNET_SERIES = {     # name -> (stages, extra sweep-file text)
    "float": ('["plan", "estimate"]', ""),
    "int8": ('["quantize", "plan", "estimate"]', 'quantization = ["int8"]\n'
             'option_sets = [{name = "int8", split_arena = true}]\n'),
    "int8-tiling": ('["quantize", "plan", "estimate"]', 'quantization = ["int8"]\n'
                    'option_sets = [{name = "int8-tiling", tiling_auto = true, split_arena = true}]\n'),
}
UNET_METRICS = ("arena_bytes", "on_chip_bytes", "fits", "overflow_bytes", "latency_ms", "latency_known_ms",
                "unknown_layers")
UNET_QUANTIZE = '[quantize]\nio = "int8"\n[data]\ncalibration = "random"\ncalibration_samples = 1\n'


def unet_sweep(folder: Path, series: str, stop: int = 512) -> Path:
    stages, axes = UNET_SERIES[series]
    return _write(folder, f"unet-{series}", f'''[sweep]
name = "unet-{series}"
stages = {stages}
metrics = [{", ".join(f'"{name}"' for name in UNET_METRICS)}]
timeout = 1800
[axes]
targets = ["stm32n6"]
{axes}[options]
external_activations = false
[[generators]]
callable = "{REPO}/tools/make_unet.py:make_unet"
name = "unet"
parameters = {{size = {{start = 128, stop = {stop}, step = 32}}}}
{UNET_QUANTIZE if series != "float" else ""}''')


def unet(folder: Path, tiling_stop: int, workers: int) -> dict:
    found = {}
    for series in UNET_SERIES:
        path = unet_sweep(folder, series, tiling_stop if series == "int8-tiling" else 512)
        load = round(os.getloadavg()[0], 1)
        result, seconds = _run(path, workers, folder)
        rows = [{"size": int(row["model"].split("=")[1].rstrip(")")), **{k: row[k] for k in ("status", *UNET_METRICS)},
                 "cell_s": row["seconds"], "error": row["error"]} for row in result.rows()]
        fitting = [row["size"] for row in rows if row["fits"] == 1]
        found[series] = {"rows": rows, "largest_fitting": max(fitting) if fitting else None,
                         "wall_s": round(seconds, 1), "load_1min": load, "workers": workers}
        log.info("unet %s: largest fitting %s, %.0f s", series, found[series]["largest_fitting"], seconds)
    _unet_png(found)
    return found


def _unet_png(found: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, latency) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for series, found_series in found.items():
        rows = [row for row in found_series["rows"] if row["status"] == "ok"]
        sizes = [row["size"] for row in rows]
        line, = memory.plot(sizes, [row["on_chip_bytes"] / MIB for row in rows], "-o", label=f"{series}: on chip")
        memory.plot(sizes, [row["arena_bytes"] / MIB for row in rows], ":", color=line.get_color(),
                    label=f"{series}: arena")
        complete = all(row["latency_ms"] is not None for row in rows)
        latency.plot(sizes, [row["latency_ms" if complete else "latency_known_ms"] for row in rows], "-o",
                     mfc=None if complete else "none",
                     label=series if complete else f"{series}: lower bound (layers without figures left out)")
        for row in rows:
            if row["fits"] == 1:
                memory.plot(row["size"], row["on_chip_bytes"] / MIB, "*", color="green", ms=14)
    memory.axhline(4.12, color="crimson", ls="--", label="on-chip SRAM (4.12 MiB)")
    memory.axhline(1.0, color="crimson", ls=":", label="largest region (cpuRAM2, 1 MiB)")
    memory.set(xlabel="input resolution (pixels, square)", ylabel="MiB", yscale="log",
               title="U-Net on stm32n6, on chip only (star: fits)")
    latency.set(xlabel="input resolution (pixels, square)", ylabel="estimated latency (ms)", yscale="log",
                title="estimated latency")
    for axes in (memory, latency):
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(RESULTS / "sweep_unet.png")
    plt.close(figure)


def _table(rows: list[dict]) -> list[str]:
    keys = list(rows[0])
    return ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)] + [
        "| " + " | ".join("-" if row[k] is None else f"{row[k]:,}" if isinstance(row[k], int) and not isinstance(
            row[k], bool) else f"{row[k]:.4g}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |"
        for row in rows]


def _measured(section: dict) -> str:
    if "measured_at" not in section:
        return "Measured by an earlier version of this script (no time or load recorded for this section)."
    return (f"Measured {section['measured_at']} by `{section['command']}`, load average (1, 5, 15 min) "
            f"{section['load_before']} before and {section['load_after']} after (2 cores, shared with other jobs).")


SESSIONS_NOTE = ("Why the sessions matter: Linux (`kernel.sched_autogroup_enabled = 1` here) shares the CPU between "
                 "sessions first, then between the processes of a session. Cell processes in the client's session "
                 "shared that one session's share, so on a busy machine a second worker added no CPU, only a "
                 "second start-up; each cell process now leads its own session (`sweep/cell_process.py`), as a "
                 "`dask worker` started on its own does. The control shows the effect without the engine when "
                 "other sessions load the machine: once at load average 10-11 (2 cores), 2 processes were 0.99x "
                 "and 1.13x as fast as 1 in one session, 1.69x and 2.45x in two; on a lightly loaded machine "
                 "`shared` and `own` differ by noise only.")


def _scaling_lines(scaling: dict, title: str) -> list[str]:
    return [f"## Scaling: 48 cells (8 int8 models x 2 targets x 3 option sets), {title}", "", _measured(scaling),
            "Each run from scratch into a fresh run store, the worker counts interleaved; `cell_compute_s` is the "
            "sum of the cells' own wall time inside the cell processes, `client_cpu_s` / `cell_process_cpu_s` the "
            "CPU seconds of the client (Dask scheduler and workers are threads in it) and of the cell processes "
            "(their imports included).", "", *_table(scaling["rows"]), "", *_table(scaling["summary"]), "",
            f"Pareto front (latency_ms, on_chip_bytes; {', '.join(scaling['not_measured'])}: not measured): cells "
            f"{scaling['front']}; plot `sweep_pareto.png`.", ""]


def _bound_lines(results: dict) -> list[str]:
    """What 2 free cores could give at best: the engine's fixed part (1-worker wall time less
    the pipeline's own time, the control's 1 process) stays, the pipeline's time halves."""
    try:
        wall = next(r["median_wall_s"] for r in results["scaling"]["summary"] if r["workers"] == 1)
        work = next(r["median_wall_s"] for r in results["control"]["summary"]
                    if r["sessions"] == "shared" and r["processes"] == 1)
    except (KeyError, StopIteration):
        return []
    fixed = wall - work
    return [f"Reading: of the 1-worker wall time ({wall:.2f} s) the pipeline's own work is {work:.2f} s (control, "
            f"1 process); the rest, {fixed:.2f} s, is the engine's (LocalCluster, the cell process's imports and "
            f"first loads, per-cell round trips and recording, see the overhead section). On 2 free cores the best "
            f"2 workers could do is {wall:.2f} / ({fixed:.2f} + {work:.2f} / 2) = {wall / (fixed + work / 2):.2f}x; "
            "the cells are too small for more. The search variant below has larger cells (an option search in "
            "each).", ""]


def _tagged(key: str) -> str:
    return f", run tagged {key.split('@')[1]!r}" if "@" in key else ""


def markdown(results: dict) -> str:
    lines = ["# Design-space sweeps (issue 14)", "", "Made by `benchmarks/sweep_bench.py`; figures from "
             "`benchmarks/results/sweep.json`. Each section says when and under which load it was measured.", ""]
    for key in sorted(key for key in results if key.split("@")[0] == "scaling"):
        lines += _scaling_lines(results[key], "plan + estimate" + _tagged(key))
        lines += _bound_lines(results) if key == "scaling" else []
    for key in sorted(key for key in results if key.split("@")[0] == "scaling-search"):
        lines += _scaling_lines(results[key], "plan + estimate + a compile-option search per cell (larger cells: "
                                "the same engine, its fixed costs spread over more work)" + _tagged(key))
    for key in sorted(key for key in results if key.split("@")[0] == "control"):
        lines += [f"## Control: the same 48 cells without the engine{_tagged(key)}", "", _measured(results[key]),
                  "Plain `deploy()` + `estimate()` calls in 1 process, or in N processes with 48 / N cells each "
                  "(imports and first loads not timed), the processes in this script's session (`shared`) or each "
                  "in its own (`own`).", "", *_table(results[key]["rows"]), "",
                  *_table(results[key]["summary"]), "", SESSIONS_NOTE, ""]
    if "overhead" in results:
        lines += ["## Engine overhead: empty cells (no stage)", "", _measured(results["overhead"]),
                  "`startup_s`: a one-cell sweep (LocalCluster, the cell processes' imports, one store write); "
                  "`per_cell_ms` = (wall - startup) x workers / cells.", "", *_table(results["overhead"]["rows"]), ""]
    for kind, series in results.get("unet", {}).items():
        if not isinstance(series, dict) or "rows" not in series:
            continue
        sizes = [row["size"] for row in series["rows"]]
        lines += [f"## U-Net {kind}, {min(sizes)} to {max(sizes)} in steps of 32, stm32n6, "
                  "external_activations = false", "",
                  f"Largest resolution that fits on chip: **{series['largest_fitting'] or 'none'}** (sweep wall "
                  f"time {series['wall_s']} s on {series.get('workers', '?')} workers, load {series.get('load_1min')} "
                  "at the start).", "", *_table(series["rows"]), ""]
    if "unet" in results:
        lines += [_measured(results["unet"]), "",
                  "`latency_ms` only when every layer has figures in the estimator; else `latency_known_ms` sums "
                  "the layers that have them (a lower bound) and `unknown_layers` counts the others (the float "
                  "U-Net's Resize layers). The int8 series are quantized by the sweep's quantize stage (integer "
                  "I/O, one random calibration input); the int8-tiling series stops at `--unet-tiling-stop` (each of "
                  "its cells searches tilings: minutes). A cell fits when the deployment's memory verdict says so: "
                  "on-chip bytes under the 4.12 MiB total are not enough, each arena must also lie in a region "
                  "(the largest on-chip one is 1 MiB) or, with `split_arena`, its tensors be spread over several "
                  "banks, each tensor in one. Latency and "
                  "memory are the planner's and estimator's figures, not measured on a board. Curve: "
                  "`sweep_unet.png` (on-chip bytes, arena and latency against resolution).", ""]
    return "\n".join(lines)


def _stamp(section: dict, load_before: list[float]) -> dict:
    section.update(command="python " + " ".join(["benchmarks/sweep_bench.py", *sys.argv[1:]]),
                   measured_at=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_before=load_before,
                   load_after=[round(value, 2) for value in os.getloadavg()])
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sections = ["scaling", "scaling-search", "control", "overhead", "unet"]
    parser.add_argument("--sections", nargs="+", default=sections, choices=sections)
    parser.add_argument("--search-budget", type=int, default=8, help="trials per cell in scaling-search")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats of scaling and control")
    parser.add_argument("--unet-tiling-stop", type=int, default=224,
                        help="the int8 + tiling U-Net series runs 128 to this size (slow: minutes per cell)")
    parser.add_argument("--tag", help="keep these sections beside the untagged ones (e.g. 'loaded': the same "
                        "measurement while other jobs load the machine)")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    output = RESULTS / "sweep.json"
    results: dict = json.loads(output.read_text()) if output.exists() else {}
    for stale in ("load_average_before", "load_average_after"):     # the old whole-file stamps
        results.pop(stale, None)
    measure = {"scaling": lambda folder: scaling(folder, arguments.workers, arguments.repeats),
               "scaling-search": lambda folder: scaling(folder, arguments.workers, arguments.repeats,
                                                        arguments.search_budget),
               "control": lambda folder: control(arguments.workers, arguments.repeats),
               "overhead": lambda folder: overhead(folder, arguments.workers),
               "unet": lambda folder: unet(folder, arguments.unet_tiling_stop, max(arguments.workers))}
    with tempfile.TemporaryDirectory() as folder:
        for section in arguments.sections:
            load_before = [round(value, 2) for value in os.getloadavg()]
            key = f"{section}@{arguments.tag}" if arguments.tag else section
            results[key] = _stamp(measure[section](Path(folder)), load_before)
            output.write_text(json.dumps(results, indent=1) + "\n")
            (RESULTS / "sweep.md").write_text(markdown(results))
    log.info("wrote %s and %s", output, RESULTS / "sweep.md")


if __name__ == "__main__":
    main()
