"""Benchmark: the Keras importer on every test architecture, against Keras's own forward.

Run ``python benchmarks/keras_import_bench.py`` (about two minutes on 2 cores). Writes
``benchmarks/results/keras_import.md``.

For each architecture of ``tests/keras_models.py`` (the per-layer models and the
applications, weights=None with seeded values), saved by tf_keras as ``.h5`` and by Keras 3
as ``.keras``:

* layers: Keras layers in the model (nested ones counted), IR nodes after import;
* import time: median of 5 runs of ``load_model`` (file read, h5py, conversion, verify);
* max error: max |ours - Keras| / (max - min of Keras's output), worst output, one seeded
  sample (``reference.run_float`` vs ``model(x, training=False)``).

Plus the goal: a full-size MobileNetV2 (224x224, alpha 1.0, weights=None) ``.h5`` imports
in under 1 s (median, min and max of 11 runs of ``load_model``).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import h5py  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

import keras_models  # noqa: E402
from mcudeploy.importers import load_model  # noqa: E402
from mcudeploy.reference import run_float  # noqa: E402
from paths import RESULTS  # noqa: E402

RUNS = 5
GOAL_RUNS = 11   # the goal's figure: median, min and max of more runs (the machine is shared)


def import_times(path: Path, runs: int = RUNS) -> list[float]:
    """Seconds of ``runs`` imports, sorted."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        load_model(path)
        times.append(time.perf_counter() - start)
    return sorted(times)


def import_seconds(path: Path) -> float:
    return statistics.median(import_times(path))


def max_error(model, path: Path) -> float:
    graph = load_model(path)
    rng = np.random.default_rng(0)
    feeds = {v.name: rng.normal(0.0, 1.0, v.shape).astype(np.float32) for v in graph.inputs}
    arguments = [feeds[v.name] for v in graph.inputs]
    expected = model(arguments if len(arguments) > 1 else arguments[0], training=False)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    ours = run_float(graph, feeds)
    return max(float(np.max(np.abs(ours[v.name] - np.asarray(e)))) / max(float(np.ptp(np.asarray(e))), 1e-6)
               for v, e in zip(graph.outputs, expected))


def count_layers(model) -> int:
    return sum(count_layers(la) if hasattr(la, "layers") else 1 for la in model.layers)


def build(name: str, k) -> object:
    if name in EXTRA:
        return EXTRA[name](k)
    if name == "activations":
        names = keras_models.TF_KERAS_ACTIVATIONS if k is tf_keras else keras_models.KERAS3_ACTIVATIONS
        return keras_models.activations(k, tf, names)
    builders = {**{n: b for n, (b, _) in keras_models.LAYER_MODELS.items()}, **keras_models.APPLICATIONS}
    return builders[name](k, tf)


# Full keras.applications architectures beyond the tests' (too slow to build in the suite).
EXTRA = {
    "ResNet50": lambda k: k.applications.ResNet50(input_shape=(32, 32, 3), weights=None, classes=10),
    "DenseNet121": lambda k: k.applications.DenseNet121(input_shape=(32, 32, 3), weights=None, classes=10),
    "NASNetMobile": lambda k: k.applications.NASNetMobile(input_shape=(32, 32, 3), weights=None, classes=10),
    "MobileNetV3Large": lambda k: k.applications.MobileNetV3Large(input_shape=(32, 32, 3), weights=None, classes=10),
    "EfficientNetV2B0": lambda k: k.applications.EfficientNetV2B0(input_shape=(32, 32, 3), weights=None, classes=10),
}


def rows(folder: Path) -> list[str]:
    lines = []
    names = [*keras_models.LAYER_MODELS, "activations", *keras_models.APPLICATIONS, *EXTRA]
    for name in names:
        for flavour, k, container in (("tf_keras", tf_keras, "h5"), ("keras3", keras, "keras")):
            if name in keras_models.LAYER_MODELS and flavour not in keras_models.LAYER_MODELS[name][1]:
                continue
            model = build(name, k)
            keras_models.randomize(model, seed=1)
            path = folder / f"{name}_{flavour}.{container}"
            model.save(path)
            nodes = len(load_model(path).nodes)
            lines.append(f"| {name} | {flavour} `.{container}` | {count_layers(model)} | {nodes} | "
                         f"{import_seconds(path) * 1000:.1f} | {max_error(model, path):.1e} |")
            print(lines[-1], flush=True)
    return lines


def mobilenet_v2_full(folder: Path) -> tuple[list[float], int, int]:
    model = tf_keras.applications.MobileNetV2(input_shape=(224, 224, 3), alpha=1.0, weights=None)
    path = folder / "mobilenet_v2_224.h5"
    model.save(path)
    return import_times(path, GOAL_RUNS), path.stat().st_size, count_layers(model)


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        load_before = os.getloadavg()
        table = rows(folder)
        times, size, layer_count = mobilenet_v2_full(folder)
        load_after = os.getloadavg()
    header = [
        "# Keras import: layers, import time, max error against Keras", "",
        "Written by `python benchmarks/keras_import_bench.py` (run as "
        "`PYTHONPATH=src nice -n 10 python3 benchmarks/keras_import_bench.py`).",
        f"Versions: tf_keras {tf_keras.__version__}, keras {keras.__version__}, TensorFlow "
        f"{tf.__version__}, h5py {h5py.__version__}, numpy {np.__version__}, Python "
        f"{sys.version.split()[0]}; {os.cpu_count()} cores, load average "
        f"{load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end (shared machine).", "",
        "Import time: median of 5 runs of `load_model` (read, h5py, conversion, IR verify). "
        "Max error: max |ours - Keras| / range of Keras's output, worst output, one seeded sample "
        "(goal <= 1e-4). Applications: weights=None with seeded values, 32x32 inputs "
        "(MobileNet alpha 0.25, MobileNetV2 alpha 0.35, MobileNetV3Small alpha 0.75; the "
        "capitalised rows are keras.applications models at full width, in no test). Keras layers: `model.layers`, those of "
        "nested models counted (Keras 3's operation layers, `keras.ops` calls, are not in "
        "`model.layers`: `keras_ops` has 24 IR nodes from 2 layers).", "",
        "| architecture | written by | Keras layers | IR nodes | import ms | max error / range |",
        "|---|---|---:|---:|---:|---:|",
    ]
    seconds = statistics.median(times)
    goal = "met" if seconds < 1.0 else "NOT met"
    footer = ["", f"**MobileNetV2 224x224, alpha 1.0, weights=None, tf_keras `.h5` "
              f"({size / 1e6:.1f} MB, {layer_count} layers): import {seconds * 1000:.0f} ms** "
              f"(median of {GOAL_RUNS}; min {times[0] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms; "
              f"goal < 1 s: {goal})."]
    (RESULTS / "keras_import.md").write_text("\n".join(header + table + footer) + "\n", encoding="utf-8")
    print(footer[-1])


if __name__ == "__main__":
    main()
