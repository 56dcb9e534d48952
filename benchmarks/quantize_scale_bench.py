"""Quantization at scale: ``mcudeploy quantize`` of a 256 x 256 segmentation U-Net (1-channel
input, sigmoid head, ONNX-default nearest Resize: ``tools/make_unet.py --segmentation``) with
100 calibration samples, side by side with onnxruntime's ``quantize_static`` (QDQ, int8
activations and per-channel int8 weights, its default MinMax calibration) on the same model
and the same data, in one run; then ``mcudeploy validate`` of the result on 20 samples;
with ``--qemu``, also ``mcudeploy generate`` and ``mcudeploy validate --on qemu-m55`` of the
result on one sample (the generated C code, bit-exact with the integer reference or not).

    python benchmarks/quantize_scale_bench.py [--samples 100] [--validation 20] [--size 256]
        [--repeats 1] [--qemu]                -> results/quantize_scale.md / .json

Every measured command runs in its own child process (``python -c``: the CLI's ``main`` or
``quantize_static`` in-process), which reports its wall time and its peak resident set
size (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) as JSON; the parent only makes the
data. With ``--repeats N`` the two quantizers alternate N times (the machine may be shared:
the load average at each run is recorded) and the table shows every run. The calibration
data are seeded random smooth images (sums of Gaussian blobs plus noise): realistic value
ranges for the ranges, not for accuracy.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS

CHILD_MCUDEPLOY = """
import json, resource, sys, time
from mcudeploy.cli.main import main
started = time.perf_counter()
status = main(sys.argv[1:])
print(json.dumps({"status": status, "seconds": time.perf_counter() - started,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
CHILD_ONNXRUNTIME = """
import json, resource, sys, time
import numpy as np
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
model, data, output = sys.argv[1:4]

class Reader(CalibrationDataReader):
    def __init__(self):
        self.samples = iter(np.load(data)["input"])
    def get_next(self):
        sample = next(self.samples, None)
        return None if sample is None else {"input": sample[None]}

started = time.perf_counter()
quantize_static(model, output, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                weight_type=QuantType.QInt8, per_channel=True)
print(json.dumps({"status": 0, "seconds": time.perf_counter() - started,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def smooth_images(count: int, size: int, seed: int) -> np.ndarray:
    """``(count, 1, size, size)`` float32: six Gaussian blobs and a little noise each."""
    rng = np.random.default_rng(seed)
    grid_y, grid_x = np.mgrid[0:size, 0:size] / float(size)
    images = np.zeros((count, 1, size, size), np.float32)
    for index in range(count):
        image = 0.05 * rng.standard_normal((size, size))
        for _ in range(6):
            centre_x, centre_y, radius = rng.uniform(0, 1, 3)
            radius = 0.05 + 0.2 * radius
            image += np.exp(-((grid_x - centre_x) ** 2 + (grid_y - centre_y) ** 2) / (2 * radius ** 2))
        images[index, 0] = image
    return images


def run_child(code: str, arguments: list[str], cwd: Path) -> dict:
    environment = dict(os.environ, MCUDEPLOY_NO_RECORD="1", PYTHONPATH=str(REPO / "src"))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *arguments], cwd=cwd, capture_output=True, text=True,
                          env=environment, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{arguments[:2]} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    result = json.loads(lines[-1])
    result["process_seconds"] = time.perf_counter() - started   # interpreter + imports + work
    result["load_average"] = os.getloadavg()[0]
    result["output"] = done.stdout[-3000:]
    return result


def make_inputs(folder: Path, size: int, samples: int, validation: int) -> tuple[Path, Path, Path]:
    sys.path.insert(0, str(REPO / "tools"))
    import onnx

    from make_unet import make_unet

    model = folder / f"unet{size}_segmentation.onnx"
    onnx.save(make_unet(size, head="sigmoid", resize_attributes="default"), model)
    calibration, data = folder / "calibration.npz", folder / "validation.npz"
    np.savez(calibration, input=smooth_images(samples, size, seed=0))
    np.savez(data, input=smooth_images(validation, size, seed=1))
    return model, calibration, data


def measure(arguments: argparse.Namespace, folder: Path) -> dict:
    model, calibration, data = make_inputs(folder, arguments.size, arguments.samples, arguments.validation)
    runs = []
    for repeat in range(arguments.repeats):
        ours = run_child(CHILD_MCUDEPLOY, ["quantize", str(model), "--calib", str(calibration),
                                           "-o", str(folder / "ours.onnx")], folder)
        theirs = run_child(CHILD_ONNXRUNTIME, [str(model), str(calibration), str(folder / "onnxruntime.onnx")], folder)
        runs.append({"repeat": repeat, "mcudeploy": ours, "onnxruntime": theirs})
    validation = None if arguments.no_validate else run_child(CHILD_MCUDEPLOY, ["validate", str(model), "--quantized", str(folder / "ours.onnx"),
                                             "--data", str(data), "--per-layer"], folder)
    result = {"model": model.name, "size": arguments.size, "calibration_samples": arguments.samples,
              "validation_samples": arguments.validation, "cpus": os.cpu_count(), "runs": runs,
              "validate": validation}
    if arguments.qemu:
        result["generate"] = run_child(CHILD_MCUDEPLOY, ["generate", str(folder / "ours.onnx"),
                                                         "-o", str(folder / "c")], folder)
        on_board = run_child(CHILD_MCUDEPLOY, ["validate", str(folder / "ours.onnx"), "--on", "qemu-m55",
                                               "--data", str(data), "--samples", "1"], folder)
        on_board["bit_exact"] = "bit-exact against the integer reference" in on_board["output"]
        found = re.search(r"(\d+) instructions per inference", on_board["output"])
        on_board["instructions"] = int(found.group(1)) if found else None
        result["qemu_m55"] = on_board
    return result


def render(result: dict) -> str:
    lines = [f"# Quantization at scale: U-Net {result['size']} x {result['size']}, "
             f"{result['calibration_samples']} calibration samples",
             "", "Measured by `benchmarks/quantize_scale_bench.py` (" + __doc__.split("\n\n")[0].split(": ", 1)[1]
             .replace("\n", " ") + "). Every command in its own child process; peak RSS from "
             f"`getrusage(RUSAGE_SELF)`. {result['cpus']} CPUs (shared: load average at each run).", "",
             "Wall time: from the tool's call to its return (after its imports); process: the whole "
             "child process as a user waits for it (interpreter, imports, work).", "",
             "| run | tool | wall time s | process s | peak RSS MB | load average |", "|---|---|---:|---:|---:|---:|"]
    for run in result["runs"]:
        for tool in ("mcudeploy", "onnxruntime"):
            figures = run[tool]
            name = "mcudeploy quantize" if tool == "mcudeploy" else "onnxruntime quantize_static"
            lines.append(f"| {run['repeat'] + 1} | {name} | {figures['seconds']:.1f} | {figures['process_seconds']:.1f} | "
                         f"{figures['peak_rss_mb']:.0f} | {figures['load_average']:.1f} |")
    validation = result["validate"] or {"seconds": float("nan"), "peak_rss_mb": float("nan")}
    lines += ["", f"`mcudeploy validate --per-layer` of the result on {result['validation_samples']} samples: "
              f"{validation['seconds']:.1f} s, peak RSS {validation['peak_rss_mb']:.0f} MB.", ""]
    for key, what in (("seconds", "Wall-time"), ("process_seconds", "Process-time")):
        ratio = [run["mcudeploy"][key] / run["onnxruntime"][key] for run in result["runs"]]
        lines += [f"{what} ratio mcudeploy / onnxruntime: {', '.join(f'{r:.2f}' for r in ratio)} "
                  "(the goal is at most 1.00).", ""]
    if "qemu_m55" in result:
        board = result["qemu_m55"]
        lines += [f"`mcudeploy generate` of the result: {result['generate']['seconds']:.1f} s; "
                  f"`mcudeploy validate --on qemu-m55` on 1 sample: "
                  f"{'bit-exact' if board['bit_exact'] else 'NOT bit-exact'} with the integer reference, "
                  f"{board['instructions']} instructions per inference, {board['seconds']:.0f} s.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--validation", type=int, default=20)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-validate", action="store_true", help="skip validate --per-layer (minutes)")
    parser.add_argument("--qemu", action="store_true", help="also generate and validate --on qemu-m55")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quantize-scale-") as folder:
        result = measure(arguments, Path(folder))
    for run in result["runs"]:
        for tool in ("mcudeploy", "onnxruntime"):
            run[tool].pop("output", None)
    for key in ("validate", "generate", "qemu_m55"):
        (result.get(key) or {}).pop("output", None)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "quantize_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "quantize_scale.md").write_text(render(result))
    print(render(result))


if __name__ == "__main__":
    main()
