"""A newcomer's first hour, timed (issue 27): a fresh clone, a fresh venv, README's first
command, then README's walk-through as a user types it, on a real float model.

    python benchmarks/walkthrough_bench.py [--work /tmp/mcudeploy_walkthrough] [--timeout 1200]

The clone (``git clone`` of this checkout's committed HEAD) sits beside a ``shared`` symlink
to this checkout's ``../shared``, as the README asks. The venv is made with ``python -m venv``
(no system packages) and every step runs with its ``bin`` first on ``PATH``, so that
``python3`` and ``mcudeploy`` are the venv's. The model is MLPerf Tiny's float ResNet-8
(CIFAR-10, 1x32x32x3 NHWC, raw 0..255 pixels: its int8 twin's input is ``scale=1
zp=-128``). No CIFAR-10 images are on the machine, so the data are 32x32 crops of the
photos that ship inside scikit-image (from this script's own Python), in the model's
layout and range; the labels are the float model's own top-1 (``mcudeploy run``), so the
accuracy ``validate`` prints is agreement with the float model, and says nothing of
CIFAR-10 accuracy; on such data the default top-1 limit (0.99) fails, and the last deploy
runs with the project file's ``top1_min`` and ``accuracy_drop_max`` loosened, as a user
would after reading the FAIL. Each step: wall time, exit code, first and last line of its output.
Writes benchmarks/results/walkthrough.md and .json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS, SHARED

MODEL = "mlperf_tiny/resnet8_float.tflite"
TARGET = "stm32h743"
INPUT = "input_1"


def walkthrough_steps(model: str) -> list[tuple[str, str]]:
    """(name, shell command) in the README's order; ``model`` is the file name in the work folder."""
    int8 = "model_int8.onnx"
    return [
        ("help", "mcudeploy --help"),
        ("analyze", f"mcudeploy analyze {model}"),
        ("lint", f"mcudeploy lint {model} --target {TARGET}"),
        ("data check", f"mcudeploy data check calib.npz --model {model}"),
        ("quantize", f"mcudeploy quantize {model} --calib calib.npz -o {int8}"),
        ("validate --per-layer", f"mcudeploy validate {model} --quantized {int8} --data val.npz "
                                 "--labels val_labels.npy --per-layer"),
        ("plan", f"mcudeploy plan {int8} --target {TARGET} --png memory.png"),
        ("generate", f"mcudeploy generate {int8} --target {TARGET} -o firmware/network --test-vectors val.npz"),
        ("validate --on qemu-m4", f"mcudeploy validate {model} --quantized {int8} --data val.npz "
                                  f"--on qemu-m4 --target {TARGET}"),
        ("init", f"mcudeploy init {model} --target {TARGET} --calib calib.npz --data val.npz --labels val_labels.npy"),
        ("deploy", "mcudeploy deploy"),
        # what a user does after a FAIL on data that are not the model's domain (photo crops,
        # not CIFAR-10: low-margin classes flip): loosen the project's thresholds and go on
        ("deploy, loosened", "sed -i 's/^# top1_min = .*/top1_min = 0.9/; s/^# accuracy_drop_max = .*/"
                             "accuracy_drop_max = 10.0/' mcudeploy.toml && mcudeploy deploy"),
        ("runs list", "mcudeploy runs list"),
    ]


def run_step(command: str, cwd: Path, env: dict[str, str], timeout: float) -> dict:
    """Wall time, exit code and the first / last non-empty output line of one shell command."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)   # in the order printed
        code, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as expired:
        code = "timeout"
        output = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
    seconds = time.perf_counter() - start
    lines = [line.strip() for line in output.splitlines() if any(c.isalnum() for c in line)]  # no table rules
    return {"command": command, "seconds": round(seconds, 2), "exit": code,
            "first": lines[0] if lines else "", "last": lines[-1] if lines else "", "output": output[-20000:]}


def photo_crops(count: int, seed: int) -> np.ndarray:
    """``count`` 32x32x3 crops (float32, 0..255) of scikit-image's photos, downscaled 4x first
    so that a crop shows an object's worth of the picture."""
    import skimage.data as photos
    images = [photos.astronaut(), photos.chelsea(), photos.coffee(), photos.rocket(), photos.immunohistochemistry()]
    rng = np.random.default_rng(seed)
    crops = []
    for index in range(count):
        image = images[index % len(images)][::4, ::4, :3].astype(np.float32)
        top = rng.integers(0, image.shape[0] - 32)
        left = rng.integers(0, image.shape[1] - 32)
        crops.append(image[top:top + 32, left:left + 32])
    return np.stack(crops)[:, None]          # (N, 1, 32, 32, 3): a leading sample axis


def prepare(work: Path) -> tuple[Path, Path]:
    """The clone beside a ``shared`` link, and a fresh venv: (clone, venv)."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / "shared").symlink_to(SHARED.resolve())
    return work / "mcudeploy", work / "venv"


def user_data(folder: Path, env: dict[str, str], timeout: float) -> dict:
    """calib.npz, val.npz and val_labels.npy (labels: the float model's top-1, via ``mcudeploy run``)."""
    np.savez(folder / "calib.npz", **{INPUT: photo_crops(100, 0)})
    np.savez(folder / "val.npz", **{INPUT: photo_crops(32, 1)})
    step = run_step("mcudeploy run model.tflite --inputs val.npz -o val_float.npz", folder, env, timeout)
    if step["exit"] == 0:
        with np.load(folder / "val_float.npz") as outputs:
            logits = outputs[list(outputs.keys())[0]]
        np.save(folder / "val_labels.npy", logits.reshape(logits.shape[0], -1).argmax(axis=1))
    return step


def versions(env: dict[str, str], clone: Path) -> dict[str, str]:
    script = ("import importlib.metadata as m\n"
              "for name in ['mcudeploy', 'numpy', 'onnx', 'onnxruntime', 'tflite', 'matplotlib', 'ortools']:\n"
              "    try: print(name, m.version(name))\n"
              "    except m.PackageNotFoundError: print(name, 'absent')\n")
    out = subprocess.run(["python3", "-c", script], env=env, capture_output=True, text=True).stdout
    found = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    tools = {}
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        path = shutil.which(tool)
        tools[tool] = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()[0] if path else "absent"
    return {"commit": commit, "python": platform.python_version(), **found, **tools}


def cell(text: str, width: int = 110) -> str:
    text = text.replace("|", "\\|").replace("`", "'")
    return text if len(text) <= width else text[:width - 3] + "..."


def _deploy_stages(rows: list[dict]) -> list[str]:
    """The stage lines (``N/9 stage status seconds summary``) and the results row of the last
    deploy that printed them."""
    for row in reversed(rows):
        stages = [line for line in row["output"].splitlines() if re.match(r"\s*\d+/\d+ \w+", line)]
        if row["name"].startswith("deploy") and stages:
            results = " ".join(row["output"].split("results:", 1)[-1].split("report:", 1)[0].split())
            return ["", f"Stages of `{row['name']}`:", "", "```", *[line.rstrip() for line in stages], "```", "",
                    f"Its results row: {results}"]
    return []


def write_results(rows: list[dict], meta: dict) -> None:
    lines = ["# A newcomer's walkthrough, timed (fresh clone, fresh venv)", "",
             f"Command: `{meta['command']}`; model `../shared/models/{MODEL}`, target `{TARGET}`; "
             f"{meta['platform']}. The data are 32x32 crops of scikit-image's photos (no CIFAR-10 on the "
             "machine); the labels are the float model's top-1, so the accuracy is agreement with it.", "",
             "| step | command | s | exit | first line | last line |", "|---|---|---:|---:|---|---|"]
    for row in rows:
        lines.append(f"| {row['name']} | `{cell(row['command'], 90)}` | {row['seconds']:.1f} | {row['exit']} | "
                     f"{cell(row['first'])} | {cell(row['last'])} |")
    total = sum(row["seconds"] for row in rows)
    failed = [f"{row['name']} (exit {row['exit']})" for row in rows if row["exit"] != 0]
    lines += ["", "Steps that did not exit 0: " + (", ".join(failed) if failed else "none") + ".", ""]
    lines += ["Failure lines, in full:", ""] + [f"- {row['name']}: `{cell(row['last'], 1000)}`"
                                              for row in rows if row["exit"] != 0]
    lines += _deploy_stages(rows)
    lines += ["", f"Total: {total:.0f} s ({total / 60:.1f} min).", "",
              f"Machine: {meta['cores']} cores, load average (1 min) {meta['load_before']:.2f} before, "
              f"{meta['load_after']:.2f} after.", "",
              "Versions: " + ", ".join(f"{name} {value}" for name, value in meta["versions"].items()) + "."]
    (RESULTS / "walkthrough.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "walkthrough.json").write_text(json.dumps({"meta": meta, "steps": rows}, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/mcudeploy_walkthrough"))
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per step")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    clone, venv = prepare(args.work)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    env.pop("MCUDEPLOY_SHARED", None)
    rows = []
    for name, command, cwd in [("git clone", f"git clone -q {REPO} {clone}", args.work),
                               ("python3 -m venv", f"{sys.executable} -m venv {venv}", args.work),
                               ("README line 1", 'python3 -m pip install -e ".[all]" && '
                                "python3 -m mcudeploy analyze examples/kws_cnn.onnx", clone)]:
        rows.append({"name": name, **run_step(command, cwd, env, args.timeout)})
        logging_line(rows[-1])
        if rows[-1]["exit"] != 0:
            break
    else:
        folder = args.work / "user"
        folder.mkdir()
        shutil.copy(SHARED / "models" / MODEL, folder / "model.tflite")
        rows.append({"name": "run (labels)", **user_data(folder, env, args.timeout)})
        logging_line(rows[-1])
        for name, command in walkthrough_steps("model.tflite"):
            rows.append({"name": name, **run_step(command, folder, env, args.timeout)})
            logging_line(rows[-1])
    meta = {"command": "python benchmarks/walkthrough_bench.py " + " ".join(sys.argv[1:]),
            "platform": platform.platform(), "cores": os.cpu_count(), "load_before": load_before,
            "load_after": os.getloadavg()[0], "versions": versions(env, clone)}
    write_results(rows, meta)
    return 0 if all(row["exit"] == 0 for row in rows) else 1


def logging_line(row: dict) -> None:
    sys.stderr.write(f"{row['name']}: exit {row['exit']} in {row['seconds']:.1f} s: {row['last'][:120]}\n")


if __name__ == "__main__":
    sys.exit(main())
