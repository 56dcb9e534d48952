"""Benchmark: the bit-exact integer reference executor (batched) against a loop over the
TensorFlow Lite Micro interpreter, on every full-integer shared model.

Run ``python benchmarks/int_executor_bench.py [--samples 1000]`` (a few minutes). Writes
``benchmarks/results/int_executor.md``.

Per model, the same ``samples`` seeded random int8 inputs go through
``run_int(graph, feeds, batch=True)`` (one call) and through TFLM (``set_input`` /
``invoke`` / ``get_output`` per sample, interpreter created once, outside the timing).
Reported: the best of ``--repeats`` wall times of each (after a small warm-up; best-of
because the machine may be shared), samples per second, the speed-up ``tflm / ours``, and
whether all output bytes are identical.
"""
from __future__ import annotations

import argparse
import logging
import os
import platform
import time

import numpy as np

from paths import INT8_MODELS, RESULTS, SHARED  # noqa: E402

MODELS = INT8_MODELS

from mcudeploy.importers import load_model  # noqa: E402
from mcudeploy.reference.int_executor import run_int  # noqa: E402
from mcudeploy.validate.references import tflm_interpreter, tflm_run  # noqa: E402


def random_batch(value, count: int) -> np.ndarray:
    info = np.iinfo(value.dtype.numpy)
    rng = np.random.default_rng(0)
    return rng.integers(info.min, info.max, (count,) + value.shape, endpoint=True).astype(value.dtype.numpy)


log = logging.getLogger("int_executor_bench")


def best_time(function, repeats: int):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def measure(relative: str, samples: int, repeats: int) -> dict:
    path = SHARED / "models" / relative
    graph = load_model(path)
    batch = random_batch(graph.inputs[0], samples)
    feeds = {graph.inputs[0].name: batch}
    interpreter = tflm_interpreter(path)
    run_int(graph, {graph.inputs[0].name: batch[:2]}, batch=True)  # warm-up (imports, caches)
    tflm_run(interpreter, batch[:2])
    ours_seconds, ours = best_time(
        lambda: run_int(graph, feeds, batch=True)[graph.outputs[0].name], repeats)
    tflm_seconds, reference = best_time(lambda: tflm_run(interpreter, batch), repeats)
    identical = ours.reshape(reference.shape).tobytes() == reference.tobytes()
    return {"model": relative.split("/")[-1], "ours": ours_seconds, "tflm": tflm_seconds,
            "identical": identical, "samples": samples}


def render(rows: list[dict], samples: int, repeats: int, command: str) -> str:
    lines = ["# Integer reference executor vs TFLite Micro", "",
             f"`{command}` on {platform.machine()} ({os.cpu_count()} CPUs), numpy "
             f"{np.__version__}, {samples} seeded random int8 inputs per model. Ours: one "
             "`run_int(..., batch=True)` call; TFLM: the `tflite_micro` Python interpreter, "
             f"one `invoke` per input. Best of {repeats} wall times each (the machine is shared; "
             "single runs vary by +-30 %).", "",
             "| model | ours (s) | TFLM loop (s) | ours / s | TFLM / s | speed-up | outputs identical |",
             "|---|---:|---:|---:|---:|---:|:---:|"]
    for row in rows:
        lines.append(f"| {row['model']} | {row['ours']:.2f} | {row['tflm']:.2f} | "
                     f"{row['samples'] / row['ours']:.0f} | {row['samples'] / row['tflm']:.0f} | "
                     f"{row['tflm'] / row['ours']:.2f}x | {'yes' if row['identical'] else 'NO'} |")
    total_ours, total_tflm = sum(r["ours"] for r in rows), sum(r["tflm"] for r in rows)
    lines += [f"| **all** | {total_ours:.2f} | {total_tflm:.2f} | | | "
              f"{total_tflm / total_ours:.2f}x | {'yes' if all(r['identical'] for r in rows) else 'NO'} |",
              ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("mcudeploy").setLevel(logging.ERROR)  # importer notes on dynamic batch
    rows = []
    for relative in MODELS:
        row = measure(relative, args.samples, args.repeats)
        log.info("%s: ours %.2fs, tflm %.2fs, identical %s", row["model"], row["ours"],
                 row["tflm"], row["identical"])
        rows.append(row)
    options = "".join(f" --{name} {value}" for name, value, default in
                      (("samples", args.samples, 1000), ("repeats", args.repeats, 3)) if value != default)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "int_executor.md").write_text(
        render(rows, args.samples, args.repeats, "python benchmarks/int_executor_bench.py" + options))


if __name__ == "__main__":
    main()
