"""``mcudeploy validate``: real float / int8 pairs, a deliberately broken model (exit 9, first
jump), the plot and JSON outputs, labels, and the wake-word accuracy against TFLite Micro."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, shared_file, shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError, ValidationFailed
from mcudeploy.importers import load_model
from mcudeploy.reference.float_kernels.quant import quantize
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.metrics import accuracy
from mcudeploy.validate.references import tflm_interpreter, tflm_run
from validate_pairs import tiny_pair

REPO = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def validate(float_path, quantized_path, tmp_path, *extra: str) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    code = main(["validate", str(float_path), "--quantized", str(quantized_path),
                 "--json", str(report), *extra])
    return code, json.loads(report.read_text()) if report.exists() else {}


def test_healthy_pair_passes_with_plot_and_json(tmp_path, capsys):
    float_path, int8_path = tiny_pair(tmp_path)
    code, report = validate(float_path, int8_path, tmp_path, "--plot", str(tmp_path / "s.png"),
                            "--samples", "20", "--seed", "4")
    assert code == 0 and report["verdict"] == "PASS" and report["samples"] == 20
    (output,) = report["outputs"]
    assert output["output"] == "logits" and output["cosine"] > 0.99 and output["top1_agreement"] == 1
    assert {c["metric"] for c in report["checks"]} == {"cosine", "top1_agreement"}
    assert "PASS" in capsys.readouterr().out
    png = (tmp_path / "s.png").read_bytes()
    assert png.startswith(PNG_MAGIC)
    from matplotlib import image
    assert image.imread(tmp_path / "s.png").ndim == 3


def test_wrong_scale_fails_with_exit_9_and_names_the_first_jump(tmp_path, capsys):
    float_path, bad_path = tiny_pair(tmp_path, bad_scale=8.0)
    code, report = validate(float_path, bad_path, tmp_path, "--per-layer")
    captured = capsys.readouterr()
    assert code == ValidationFailed.exit_code == 9
    assert report["verdict"] == "FAIL" and report["outputs"][0]["cosine"] < 0.9
    assert report["per_layer"]["first_jump"] == "y2"
    assert "first jump: y2" in captured.out and "validation FAILED: cosine" in captured.err


@pytest.mark.parametrize("value, samples, said", [
    (0.9375, 32, "(2 of 32 samples change their top-1 class; the limit allows none below 100 samples)"),
    (0.98, 200, "(4 of 200 samples change their top-1 class; the limit allows 2)"),
])
def test_a_top1_failure_says_how_many_samples_changed_class(value, samples, said):
    from mcudeploy.validate.thresholds import Check
    text = Check("logits", "top1_agreement", value, 0.99, ">=").describe(samples)
    assert text == f"top1_agreement of output 'logits' is {value:g}, needs >= 0.99 {said}"
    assert Check("logits", "cosine", 0.9, 0.99, ">=").describe(samples) == "cosine of output 'logits' is 0.9, needs >= 0.99"


def test_accuracy_drop_suggests_mixed_precision(tmp_path, capsys):
    float_path, bad_path = tiny_pair(tmp_path, bad_scale=8.0)
    x = np.random.default_rng(2).uniform(-1, 1, (40, 6, 6, 2)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    graph = load_model(float_path)
    from mcudeploy.reference import run_float
    labels = np.array([run_float(graph, {"x": s[None]})["logits"].argmax() for s in x])
    np.save(tmp_path / "y.npy", labels)
    code, report = validate(float_path, bad_path, tmp_path, "--data", str(tmp_path / "x.npy"),
                            "--labels", str(tmp_path / "y.npy"))
    output = report["outputs"][0]
    assert code == 9 and output["float_accuracy"] == 1.0
    assert output["accuracy_drop"] > 5
    assert report["hint"].startswith("accuracy drops by more than 5 points") and "y2" in report["hint"]
    changed = round((1 - output["top1_agreement"]) * 40)
    assert f"({changed} of 40 samples change their top-1 class" in capsys.readouterr().err


def test_usage_errors(tmp_path, capsys):
    float_path, int8_path = tiny_pair(tmp_path)
    example = REPO / "examples" / "kws_cnn.onnx"
    assert main(["validate", str(float_path), "--quantized", str(float_path)]) == UsageError.exit_code
    assert "not quantized" in capsys.readouterr().err
    assert main(["validate", str(example), "--quantized", str(int8_path)]) == UsageError.exit_code
    assert "does not match" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.zeros((2, 6, 6, 2), np.float32))
    assert main(["validate", str(float_path), "--quantized", str(int8_path), "--data",
                 str(tmp_path / "x.npy"), "--range", "0,1"]) == UsageError.exit_code


@pytest.mark.slow
def test_resnet8_float_vs_int8_on_random_inputs(tmp_path):
    """50 uniform random images in [0, 255] (the int8 input's range). Expect FAIL there:
    noise images are far from CIFAR-10 and give near-tied softmax scores, so a few top-1
    answers flip (observed: cosine 0.9866, top-1 0.94), while the logits agree closely
    (Gemm layer cosine > 0.995). Lower-contrast inputs (range 100..156) pass."""
    float_path = shared_model("mlperf_tiny/resnet8_float.tflite")
    int8_path = shared_model("mlperf_tiny/resnet8_int8.tflite")
    code, report = validate(float_path, int8_path, tmp_path, "--per-layer")
    output = report["outputs"][0]
    print(f"resnet8 random [0,255]: cosine {output['cosine']:.4f}, top-1 {output['top1_agreement']}")
    assert code in (0, 9) and 0.98 < output["cosine"] < 1.0 and output["top1_agreement"] >= 0.9
    assert all(layer["matched_by"] == "name" for layer in report["per_layer"]["layers"])
    gemm = next(layer for layer in report["per_layer"]["layers"] if layer["op"] == "Gemm")
    assert gemm["cosine"] > 0.995 and report["per_layer"]["first_jump"] is None
    code, report = validate(float_path, int8_path, tmp_path, "--range", "100,156")
    assert code == 0 and report["outputs"][0]["cosine"] > 0.99


@pytest.mark.slow
def test_mobilenet_vww_float_vs_int8_passes(tmp_path):
    code, report = validate(shared_model("mlperf_tiny/mobilenetv1_vww_float.tflite"),
                            shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite"), tmp_path)
    output = report["outputs"][0]
    assert code == 0 and output["cosine"] > 0.999 and output["top1_agreement"] == 1.0
    assert output["top5_agreement"] is None          # two classes


def test_wakeword_accuracy_equals_tflite_micro(tmp_path):
    path = shared_model("mlperf_tiny/streaming_wakeword_int8.tflite")
    archive = DATA / "streaming_wakeword_samples.npz"
    shared_file(archive)
    graph = load_model(path)
    value = graph.inputs[0]
    with np.load(archive) as loaded:
        specs, labels = loaded["specs"], loaded["labels"].astype(np.int64)
    # (45, 30, 1, 40) float64 -> (45, 1, 30, 1, 40) int8 with the input's scale / zero point.
    features = quantize(specs[:, None].astype(np.float32), value.quant, np.int8)
    ours = run_int(graph, {value.name: features}, batch=True)[graph.outputs[0].name]
    theirs = tflm_run(tflm_interpreter(path), features).reshape(ours.shape)
    ours_accuracy, tflm_accuracy = accuracy(ours[:, 0], labels), accuracy(theirs[:, 0], labels)
    print(f"streaming wake word, 45 samples: run_int accuracy {ours_accuracy:.4f}, "
          f"TFLM {tflm_accuracy:.4f}")
    assert np.array_equal(ours, theirs) and ours_accuracy == tflm_accuracy



def test_onnx_qdq_model_from_mcudeploy_quantize(tmp_path):
    """The QDQ ONNX model written by ``mcudeploy quantize`` validates against its float
    original; its layers pair by node name (tensor names change in the ONNX round trip)."""
    example = REPO / "examples" / "kws_cnn.onnx"
    calibration = np.random.default_rng(1).normal(size=(32, 1, 1, 49, 10)).astype(np.float32)
    np.save(tmp_path / "calib.npy", calibration)
    quantized = tmp_path / "kws_qdq.onnx"
    assert main(["quantize", str(example), "--calib", str(tmp_path / "calib.npy"),
                 "-o", str(quantized)]) == 0
    np.save(tmp_path / "x.npy", calibration[:10])
    code, report = validate(example, quantized, tmp_path, "--data", str(tmp_path / "x.npy"),
                            "--per-layer")
    assert code in (0, 9) and report["samples"] == 10
    layers = report["per_layer"]["layers"]
    assert {layer["node"] for layer in layers} >= {"stem/conv", "block2.pw/conv", "fc", "softmax"}
    assert {layer["matched_by"] for layer in layers} <= {"name", "node name"}
    assert report["outputs"][0]["cosine"] > 0.9
