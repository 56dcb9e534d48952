"""Preprocessing on the board: instructions per frame / clip of the generated preprocess.c under
QEMU (mps2-an386 Cortex-M4, mps3-an547 Cortex-M55), and its bit-exactness with the Python
implementation (host and both boards). Writes benchmarks/results/preprocess_cycles.md.

    python benchmarks/preprocess_cycles.py
"""
from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
import time

import numpy as np

from paths import RESULTS, SHARED_MODELS

sys.path.insert(0, str(RESULTS.parents[1] / "src"))
from mcudeploy.driver import load_graph  # noqa: E402
from mcudeploy.ir import DType, QuantParams, Value  # noqa: E402
from mcudeploy.preprocess import parse_preprocess  # noqa: E402
from mcudeploy.preprocess.audio import preprocess_clip  # noqa: E402
from mcudeploy.preprocess.c_check import run_preprocess_c  # noqa: E402
from mcudeploy.preprocess.emit import preprocess_files  # noqa: E402
from mcudeploy.preprocess.image import preprocess_frame  # noqa: E402

BOARDS = ("mps2-an386", "mps3-an547")
FRAME = {"format": "rgb565", "width": 320, "height": 240, "crop": [40, 0, 240, 240],
         "scale": 1.0 / 127.5, "offset": -1.0}
AUDIO = {"kind": "audio", "sample_rate": 16000, "samples": 16000, "frame_length": 640, "frame_step": 320,
         "upper_hz": 4000.0}


def cases():
    mobilenet = load_graph(SHARED_MODELS / "onnx" / "mobilenetv2_0.5_128.onnx").inputs[0]
    int8_mobilenet = Value(mobilenet.name, DType.INT8, tuple(mobilenet.shape), layout="NCHW",
                           quant=QuantParams(np.array([1 / 127.5], np.float32), np.array([0], np.int32)))
    dscnn = load_graph(SHARED_MODELS / "mlperf_tiny" / "dscnn_kws_int8.tflite").inputs[0]
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, 320 * 240 * 2, dtype=np.uint8).tobytes()
    t = np.arange(16000) / 16000
    clip = np.clip(6000 * np.sin(2 * np.pi * (300 + 1500 * t) * t) + rng.normal(0, 300, t.size), -32768, 32767)
    clip = clip.astype("<i2").tobytes()
    for method in ("nearest", "bilinear"):
        spec = parse_preprocess({**FRAME, "resize": method})
        yield (f"320x240 RGB565 -> MobileNetV2 0.5 128 input (1x3x128x128 int8 NCHW), {method}", spec,
               int8_mobilenet, frame, preprocess_frame(frame, spec, int8_mobilenet).tobytes())
    spec = parse_preprocess(AUDIO)
    yield ("1 s 16 kHz clip -> DS-CNN input (1x49x10x1 int8): 49 frames, 1024-point FFT, 10 mel", spec, dscnn,
           clip, preprocess_clip(clip, spec, dscnn).tobytes())


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    load = os.getloadavg()
    started = time.time()
    rows = []
    for name, spec, value, data, python in cases():
        files = preprocess_files(spec, value)
        host, _ = run_preprocess_c(files, data)
        row = {"name": name, "host": host == python}
        for board in BOARDS:
            produced, instructions = run_preprocess_c(files, data, board)
            row[board] = (produced == python, instructions)
        rows.append(row)
    gcc = subprocess.run(["arm-none-eabi-gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    qemu = subprocess.run(["qemu-system-arm", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    lines = ["# Preprocessing in C: bit-exactness and instructions per frame", "",
             f"`python benchmarks/preprocess_cycles.py` on {platform.machine()} ({os.cpu_count()} CPUs, load "
             f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the start); numpy {np.__version__}; {gcc}; {qemu}; "
             f"{time.time() - started:.0f} s.", "",
             "Instructions: QEMU `-icount shift=0`, SysTick around one `preprocess_frame` call (resolution 40 / "
             "31.25 instructions), -O2. Bit-exact: every byte of the C output equals the Python implementation's "
             "(mcudeploy.preprocess).", "",
             "| case | host | M4 | M55 | M4 instructions | M55 instructions |", "|---|:---:|:---:|:---:|---:|---:|"]
    for row in rows:
        flags = ["bit-exact" if ok else "**MISMATCH**" for ok in (row["host"], row[BOARDS[0]][0], row[BOARDS[1]][0])]
        lines.append(f"| {row['name']} | {' | '.join(flags)} | {row[BOARDS[0]][1]:,} | {row[BOARDS[1]][1]:,} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "preprocess_cycles.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
