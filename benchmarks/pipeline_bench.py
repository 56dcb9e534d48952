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
"""
from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    vela = shutil.which("vela")
    rows = []
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
    recording = recording_overhead_ms()
    document = {"help_s": round(help_time, 3), "recording_ms": round(recording, 2), "repeat": args.repeat, "target": TARGET, "rows": rows,
                "machine": platform.platform(), "python": platform.python_version()}
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
    (RESULTS / "pipeline.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
