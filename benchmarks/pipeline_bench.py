"""Speed of the one pipeline, side by side in one run: ``mcudeploy --help``, and ``mcudeploy
plan`` of every MLPerf Tiny int8 model against Arm Vela's whole compile of the same file.

    python benchmarks/pipeline_bench.py [--repeat 5]

Each command runs as a fresh process (what a user waits for: interpreter start, imports,
work), ``--repeat`` times, alternating ours and Vela's so that machine noise hits both; the
median wall time is kept. Goals (issue 8): ``--help`` under 0.15 s; ``plan`` of every model
faster than Vela's compile (ratio < 1). Also the run store's cost around a command that does
nothing (issue 13's goal: a few ms; median of 30 in-process calls of the recording hook, so
that it is measured here and not asserted in a timed unit test). Writes
benchmarks/results/pipeline.md and .json.

What a user sees differs from the table's ``plan`` in three ways, measured on VWW beside it
(issue 27: a newcomer measured 1.5x Vela where this table said 0.8x): the run store (on by
default; the table switches it off to time the pipeline), the first run after a fresh clone
(no ``__pycache__``: every mcudeploy module is compiled; ``python -B`` on a copy of ``src``
without caches, so each repetition is a first run), and the machine's load (the load average
and the core count are recorded before and after; on 2 cores other work slows the
interpreter's start-up and imports more than Vela's, which imports less).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paths import RESULTS, SHARED_MODELS

MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
          "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite"]
TARGET = "stm32h743"
ENV = {"MCUDEPLOY_NO_RECORD": "1"}   # the timing of the pipeline, not of the run store


def wall(command: list[str]) -> float:
    import os
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, **ENV})
    return time.perf_counter() - start


def median_of(commands: dict[str, list[str]], repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            times[name].append(wall(command))
    return {name: statistics.median(values) for name, values in times.items()}


def recording_overhead_ms(count: int = 30) -> float:
    """Median wall time of :func:`mcudeploy.cli.recording.record_command` around a no-op, in
    a fresh run store (open, insert, update, close)."""
    import os

    from mcudeploy.cli.recording import record_command
    from paths import REPO

    model = REPO / "examples" / "kws_cnn.onnx"
    with tempfile.TemporaryDirectory() as folder:
        os.environ.pop("MCUDEPLOY_NO_RECORD", None)
        args = argparse.Namespace(command="analyze", model=model, verbose=0, runs=str(Path(folder) / "runs.sqlite"),
                                  no_record=False, json=None, csv=None)
        record_command(args, ["analyze", str(model)], lambda: 0)
        durations = []
        for _ in range(count):
            start = time.perf_counter()
            record_command(args, ["analyze", str(model)], lambda: 0)
            durations.append(time.perf_counter() - start)
    return 1000 * statistics.median(durations)


def user_variants(repeat: int, folder: str) -> dict[str, float]:
    """VWW's ``plan`` as a user runs it: recording on (a fresh store in a project folder), and
    the first run after a fresh clone (module docstring), beside the table's command."""
    from paths import REPO

    path = str(SHARED_MODELS / "mlperf_tiny/mobilenetv1_vww_int8.tflite")
    cold_src = Path(folder) / "src"
    shutil.copytree(REPO / "src", cold_src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    plan = ["-m", "mcudeploy", "plan", path, "--target", TARGET]
    commands = {"plan (no recording)": [sys.executable, *plan],
                "plan (recording, as a user runs it)": ["env", "-u", "MCUDEPLOY_NO_RECORD",
                                                        f"MCUDEPLOY_RUNS={folder}/runs.sqlite", sys.executable, *plan],
                "plan (first run after a fresh clone)": ["env", f"PYTHONPATH={cold_src}", sys.executable, "-B", *plan]}
    vela = shutil.which("vela")
    if vela:
        commands["vela"] = [vela, path, "--output-dir", folder]
    return median_of(commands, repeat)


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version
    found = {"python": platform.python_version()}
    for package in ("mcudeploy", "ethos-u-vela", "numpy", "onnx", "tflite"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "absent"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    vela = shutil.which("vela")
    rows = []
    load_before = os.getloadavg()
    help_time = median_of({"help": [sys.executable, "-m", "mcudeploy", "--help"]}, args.repeat)["help"]
    with tempfile.TemporaryDirectory() as folder:
        for model in MODELS:
            path = str(SHARED_MODELS / model)
            commands = {"plan": [sys.executable, "-m", "mcudeploy", "plan", path, "--target", TARGET]}
            if vela:
                commands["vela"] = [vela, path, "--output-dir", folder]
            medians = median_of(commands, args.repeat)
            rows.append({"model": model.split("/")[1], "plan_s": round(medians["plan"], 3),
                         "vela_s": round(medians["vela"], 3) if vela else None,
                         "ratio": round(medians["plan"] / medians["vela"], 3) if vela else None})
        variants = user_variants(args.repeat, folder)
    recording = recording_overhead_ms()
    load_after = os.getloadavg()
    load = {"cores": os.cpu_count(), "load_average_1min_before": round(load_before[0], 2),
            "load_average_1min_after": round(load_after[0], 2)}
    document = {"help_s": round(help_time, 3), "recording_ms": round(recording, 2), "repeat": args.repeat, "target": TARGET, "rows": rows,
                "vww_variants_s": {k: round(v, 3) for k, v in variants.items()}, "load": load,
                "versions": versions(), "machine": platform.platform(), "python": platform.python_version()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps(document, indent=1) + "\n")
    lines = ["# Pipeline speed: `mcudeploy --help` and `plan` vs Vela's compile",
             "", f"Command: `python benchmarks/pipeline_bench.py --repeat {args.repeat}` "
             f"(median wall time of fresh processes, ours and Vela's alternating; {platform.platform()}).",
             "", f"`mcudeploy --help`: **{help_time:.3f} s** (goal < 0.15 s).", "",
             f"Recording a run (the hook around a command that does nothing, median of 30): "
             f"**{recording:.1f} ms**.", "",
             f"| model | mcudeploy plan --target {TARGET} (s) | vela (s) | plan / vela |", "|---|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['model']} | {row['plan_s']:.3f} | {row['vela_s']} | {row['ratio']} |")
    vela_s = variants.get("vela")
    lines += ["", "VWW as a user runs it (same run, same repetitions):", "",
              "| command | median (s) | / vela |", "|---|---:|---:|"]
    for name, seconds in variants.items():
        lines.append(f"| {name} | {seconds:.3f} | {seconds / vela_s:.2f} |" if vela_s else f"| {name} | {seconds:.3f} | - |")
    warm, cold = variants["plan (no recording)"], variants["plan (first run after a fresh clone)"]
    lines += ["", f"The first run after a fresh clone takes {cold / warm:.2f}x a warm one: it compiles every "
              "mcudeploy module it imports (an editable install writes no `__pycache__`; the first run does, "
              "so only it pays). A single `plan` timed right after `git clone` measures that run, not the "
              "table's. On a loaded machine both sides slow down and the ratio moves with the load, which is "
              "recorded below."]
    lines += ["", f"Machine: {load['cores']} cores, load average (1 min) {load['load_average_1min_before']} before, "
              f"{load['load_average_1min_after']} after. Versions: "
              + ", ".join(f"{k} {v}" for k, v in document["versions"].items()) + "."]
    (RESULTS / "pipeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
