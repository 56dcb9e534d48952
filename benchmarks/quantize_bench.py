"""Benchmark: mcudeploy's post-training int8 quantizer against onnxruntime's
``quantize_static`` on MobileNetV2 0.5 (128x128, ST model zoo), same calibration data.

Run ``python benchmarks/quantize_bench.py`` (a few minutes). Writes
``benchmarks/results/quantize.md`` and ``quantize.json``.

Data: 200 calibration and 50 held-out evaluation images, seeded random crops (scale 0.3-1
of the shorter side, random flip) of the photos that ship inside scikit-image
(``skimage.data``: astronaut, chelsea, coffee, rocket, ...; grayscale ones stacked to RGB),
resized to 128x128 with Pillow, scaled to [-1, 1] (MobileNetV2's preprocessing), NCHW.
Without scikit-image the images are seeded uniform noise (stated in the results).

Metrics on the 50 held-out images, against the float model (onnxruntime float32):
cosine and SQNR of the softmax output (2 classes) and of the logits (the tensor before
Softmax), top-1 agreement.

* ours: calibration once, then each observer (minmax, percentile, entropy, mse); per-channel
  int8 weights; the quantized IR runs bit-exactly on ``run_int``; the exported QDQ ONNX also
  runs in onnxruntime (``ours QDQ in ORT``);
* onnxruntime: ``quantize_static(QDQ, per_channel=True, QInt8 activations and weights)``
  with its MinMax, Percentile (99.999) and Entropy calibrators on the same 200 images, run
  in onnxruntime. Our percentile observer uses 99.99.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS, SHARED  # noqa: E402

MODEL = SHARED / "models" / "onnx" / "mobilenetv2_0.5_128.onnx"
CALIBRATION, EVALUATION, SIZE = 200, 50, 128
PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "immunohistochemistry", "colorwheel",
          "hubble_deep_field", "camera", "coins", "moon", "clock", "grass", "gravel", "brick")


def _photos() -> list[np.ndarray]:
    import skimage.data

    photos = []
    for name in PHOTOS:
        try:
            image = np.asarray(getattr(skimage.data, name)())
        except Exception:  # noqa: BLE001 - photos that need a download are skipped
            continue
        photos.append(np.stack([image] * 3, axis=-1) if image.ndim == 2 else image[..., :3])
    return photos


def _crops(photos: list[np.ndarray], count: int, seed: int) -> np.ndarray:
    from PIL import Image

    rng = np.random.default_rng(seed)
    batch = np.empty((count, 1, 3, SIZE, SIZE), np.float32)
    for index in range(count):
        photo = photos[rng.integers(len(photos))]
        side = int(min(photo.shape[:2]) * rng.uniform(0.3, 1.0))
        top = rng.integers(photo.shape[0] - side + 1)
        left = rng.integers(photo.shape[1] - side + 1)
        crop = Image.fromarray(np.ascontiguousarray(photo[top:top + side, left:left + side]))
        pixels = np.asarray(crop.resize((SIZE, SIZE), Image.BILINEAR), np.float32)
        if rng.random() < 0.5:
            pixels = pixels[:, ::-1]
        batch[index, 0] = (pixels / 127.5 - 1.0).transpose(2, 0, 1)
    return batch


def datasets() -> tuple[np.ndarray, np.ndarray, str]:
    try:
        photos = _photos()
        return _crops(photos, CALIBRATION, 0), _crops(photos, EVALUATION, 1), \
            f"random crops of {len(photos)} skimage.data photos"
    except ImportError:
        rng = np.random.default_rng(0)
        make = lambda n: rng.uniform(-1, 1, (n, 1, 3, SIZE, SIZE)).astype(np.float32)  # noqa: E731
        return make(CALIBRATION), make(EVALUATION), "seeded uniform noise (no scikit-image)"


def scores(reference: np.ndarray, estimate: np.ndarray) -> dict[str, float]:
    from mcudeploy.quantize.metrics import cosine, sqnr_db

    return {"cosine": cosine(reference, estimate), "sqnr_db": sqnr_db(reference, estimate)}


def with_logits_output(path: Path, logits: str, destination: Path) -> Path:
    """A copy of the float model that also outputs the logits tensor."""
    import onnx

    model = onnx.load(str(path))
    model.graph.output.append(onnx.helper.make_tensor_value_info(logits, onnx.TensorProto.FLOAT, None))
    onnx.save(model, str(destination))
    return destination


def run_ort(path: Path, batch: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    runs = [session.run(None, {name: sample}) for sample in batch]
    return [np.concatenate([run[i] for run in runs]) for i in range(len(runs[0]))]


def ort_quantize(float_path: Path, calibration: np.ndarray, destination: Path,
                 method: str = "MinMax") -> Path:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([{"input_1:0": sample} for sample in calibration])

        def get_next(self):
            return next(self.items, None)

    quantize_static(str(float_path), str(destination), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=getattr(CalibrationMethod, method))
    return destination


def ours(calibration: np.ndarray, evaluation: np.ndarray, logits: str, workdir: Path) -> dict:
    from mcudeploy.exporters.onnx_qdq import export_onnx_qdq
    from mcudeploy.importers import load_model
    from mcudeploy.quantize.apply import quantize_graph
    from mcudeploy.quantize.calibration import calibrate, load_calibration
    from mcudeploy.quantize.observers import RANGE_METHODS, observed_range
    from mcudeploy.quantize.prepare import prepare_for_quantization
    from mcudeploy.reference.int_executor import run_int

    prepared = prepare_for_quantization(load_model(MODEL))
    name = prepared.inputs[0].name
    start = time.perf_counter()
    observed = calibrate(prepared, load_calibration(list(calibration), prepared), progress=False)
    results = {"calibration_seconds": time.perf_counter() - start}
    for method in RANGE_METHODS:
        ranges = {key: observed_range(sample, method) for key, sample in observed.items()}
        quantized = quantize_graph(prepared, ranges).graph
        capture = run_int(quantized, {name: evaluation}, batch=True, capture=True)
        values = {v.name: v for v in quantized.values()}
        output = quantized.outputs[0].name
        logit_value = values[logits]
        path = export_onnx_qdq(quantized, workdir / f"ours_{method}.onnx")
        results[method] = {"output": capture[output].reshape(len(evaluation), -1),
                           "logits": logit_value.quant.dequantize(capture[logits]).reshape(len(evaluation), -1),
                           "qdq_in_ort": run_ort(path, evaluation)[0]}
    return results


def summarize(reference: dict, candidate: dict) -> dict:
    row = {f"output_{k}": v for k, v in scores(reference["output"], candidate["output"]).items()}
    row.update({f"logits_{k}": v for k, v in scores(reference["logits"], candidate["logits"]).items()})
    row["top1_agreement"] = float(np.mean(reference["output"].argmax(1) == candidate["output"].argmax(1)))
    return row


def main() -> int:
    sys.path.insert(0, str(REPO / "src"))
    import logging
    logging.disable(logging.WARNING)
    calibration, evaluation, origin = datasets()
    logits = "StatefulPartitionedCall/mobilenet_v2_128_0.5/predictions_dense/BiasAdd:0"
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        float_path = with_logits_output(MODEL, logits, workdir / "float.onnx")
        output, logit_values = run_ort(float_path, evaluation)
        reference = {"output": output, "logits": logit_values}
        rows, ort_seconds = {}, 0.0
        for method in ("MinMax", "Percentile", "Entropy"):
            start = time.perf_counter()
            ort_path = ort_quantize(float_path, calibration, workdir / f"ort_{method}.onnx", method)
            ort_seconds = ort_seconds or time.perf_counter() - start
            ort_output, ort_logits = run_ort(ort_path, evaluation)
            rows[f"onnxruntime quantize_static {method} (QDQ, per-channel)"] = summarize(
                reference, {"output": ort_output, "logits": ort_logits})
        mine = ours(calibration, evaluation, logits, workdir)
    for method in ("minmax", "percentile", "entropy", "mse"):
        rows[f"mcudeploy {method} (run_int, bit-exact)"] = summarize(reference, mine[method])
        rows[f"mcudeploy {method} QDQ export in onnxruntime"] = {
            f"output_{k}": v for k, v in scores(output, mine[method]["qdq_in_ort"]).items()}
    write(rows, origin, mine["calibration_seconds"], ort_seconds)
    return 0


def write(rows: dict, origin: str, calibration_seconds: float, ort_seconds: float) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quantize.json").write_text(json.dumps(
        {"data": origin, "calibration": CALIBRATION, "evaluation": EVALUATION, "rows": rows},
        indent=2, default=float) + "\n")
    columns = ("output_cosine", "output_sqnr_db", "logits_cosine", "logits_sqnr_db", "top1_agreement")
    lines = ["# Post-training int8 quantization: mcudeploy vs onnxruntime", "",
             f"Model: `onnx/mobilenetv2_0.5_128.onnx` (2 classes). Calibration: {CALIBRATION} "
             f"images, evaluation: {EVALUATION} other images ({origin}). Reference: the float "
             "model in onnxruntime. Produced by `python benchmarks/quantize_bench.py`; "
             f"our calibration pass took {calibration_seconds:.1f} s (float reference executor), "
             f"onnxruntime's quantize_static (MinMax) {ort_seconds:.1f} s.", "",
             "| quantizer | " + " | ".join(columns) + " |",
             "|---|" + "---|" * len(columns)]
    for name, row in rows.items():
        cells = [f"{row[c]:.5f}" if c in row and "cosine" in c else
                 f"{row[c]:.2f}" if c in row else "" for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Columns: cosine / SQNR (dB) against the float model over the 50 evaluation images, "
              "on the softmax output and on the logits (the tensor before Softmax); top-1 "
              "agreement with the float model. `run_int` rows are our quantized IR on the "
              "bit-exact integer reference (TFLite arithmetic); `QDQ export in onnxruntime` "
              "rows are the same quantized model exported as ONNX QDQ and run by onnxruntime, "
              "whose own integer kernels round differently (see tests/test_quantize_export.py)."]
    (RESULTS / "quantize.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
