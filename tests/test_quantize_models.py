"""Quantizing real models end to end (library and CLI), automatic mixed precision, and the
refusal of models that are not float."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UnsupportedError, UsageError
from mcudeploy.exporters.onnx_qdq import export_onnx_qdq
from mcudeploy.importers import load_model
from mcudeploy.quantize.metrics import cosine
from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
from mcudeploy.reference import run_float

REPO = Path(__file__).resolve().parents[1]
KWS = REPO / "examples" / "kws_cnn.onnx"


def kws_data(count: int = 100, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 1, 1, 49, 10)).astype(np.float32)


@pytest.fixture(scope="module")
def kws():
    return quantize_model(load_model(KWS), list(kws_data()), QuantizationConfig(progress=False))


def test_kws_int8_output_is_close_to_float_and_the_export_runs(kws, tmp_path):
    assert kws.report.output_cosine >= 0.99
    graph = load_model(KWS)
    session = ort.InferenceSession(str(export_onnx_qdq(kws.graph, tmp_path / "kws.onnx")))
    for sample in kws_data(5, seed=3):
        expected = run_float(graph, {"input": sample})["probabilities"]
        assert cosine(expected, session.run(None, {"input": sample})[0]) >= 0.99


def test_kws_report_has_every_layer_and_tensor(kws):
    report = kws.report
    assert {row.node for row in report.layers} >= {"stem/conv", "fc", "softmax"}
    assert all(row.precision == "int8" for row in report.layers)
    assert all(0.0 <= row.clipped_fraction <= 1.0 for row in report.tensors)
    assert all(row.sqnr_db > 15 for row in report.layers)


def test_auto_mixed_with_an_easy_target_keeps_everything_int8():
    outcome = quantize_model(load_model(KWS), list(kws_data()),
                             QuantizationConfig(auto_mixed=True, target_cosine=0.9, progress=False))
    assert outcome.mixed.met and outcome.mixed.nodes == []


# 16x8 keeps int8 weights (about 45 dB per layer here), so its reachable target is lower.
@pytest.mark.parametrize("fallback,target", [("float", 0.99998), ("int16", 0.99994)])
def test_auto_mixed_picks_the_fewest_sensitive_layers(fallback, target):
    config = QuantizationConfig(auto_mixed=True, target_cosine=target, fallback=fallback,
                                progress=False)
    outcome = quantize_model(load_model(KWS), list(kws_data()), config)
    mixed = outcome.mixed
    assert mixed.nodes and mixed.history[0][2] < target
    assert mixed.met and mixed.cosine >= target
    assert mixed.nodes == [entry.node for entry in mixed.sensitivity[:len(mixed.nodes)]]
    # each prefix shorter than the chosen one missed the target
    assert all(cos < target for _, _, cos in mixed.history[:-1])
    moved = set(outcome.report.float_nodes if fallback == "float" else outcome.report.int16_nodes)
    assert set(mixed.nodes) <= moved


@pytest.mark.slow
def test_mobilenetv2_with_random_calibration_data():
    graph = load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx"))
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (100, 1, 3, 128, 128)).astype(np.float32)
    outcome = quantize_model(graph, list(data), QuantizationConfig(progress=False,
                                                                     evaluation_samples=8))
    # measured 0.9999 on uniform noise; realistic images: benchmarks/results/quantize.md
    assert outcome.report.output_cosine >= 0.99
    assert not outcome.report.float_nodes


@pytest.mark.parametrize("model,error", [("mlperf_tiny/resnet8_int8.tflite", UsageError),
                                         ("mlperf_tiny/dscnn_kws_hybrid.tflite", UnsupportedError)])
def test_quantized_and_hybrid_models_are_refused(model, error):
    graph = load_model(shared_model(model))
    with pytest.raises(error, match="already quantized|hybrid"):
        quantize_model(graph, [], QuantizationConfig(progress=False))


def test_onnx_qdq_model_is_reported_as_already_quantized(kws, tmp_path):
    path = export_onnx_qdq(kws.graph, tmp_path / "q.onnx")
    with pytest.raises(UsageError, match="already quantized.*ONNX QDQ"):
        quantize_model(load_model(path), [], QuantizationConfig(progress=False))


def test_cli_quantize_writes_model_and_report(tmp_path, capsys):
    np.save(tmp_path / "calib.npy", kws_data(100)[:, 0])
    out, report = tmp_path / "kws_int8.onnx", tmp_path / "report.json"
    code = main(["quantize", str(KWS), "--calib", str(tmp_path / "calib.npy"), "-o", str(out),
                 "--observer", "percentile", "--keep-float", "fc", "--int16", "block1.pw/conv",
                 "--report", str(report)])
    assert code == 0
    data = json.loads(report.read_text())
    assert data["observer"] == "percentile" and data["float_nodes"] == ["fc"]
    assert data["int16_nodes"] == ["block1.pw/conv"] and data["output_cosine"] > 0.99
    assert ort.InferenceSession(str(out)).get_outputs()[0].name == "probabilities"
    assert "least accurate layers" in capsys.readouterr().out


def test_cli_whole_model_in_16x8_mode(tmp_path):
    np.save(tmp_path / "calib.npy", kws_data(100)[:, 0])
    out, report = tmp_path / "kws_16x8.onnx", tmp_path / "report.json"
    assert main(["quantize", str(KWS), "--calib", str(tmp_path / "calib.npy"), "-o", str(out),
                 "--activations", "int16", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert {row["dtype"] for row in data["tensors"]} == {"int16"}
    assert {row["precision"] for row in data["layers"]} <= {"int16", "float32"}
    assert data["output_cosine"] > 0.9999


@pytest.mark.parametrize("extra,code,text", [
    (["--keep-float", "nope"], 2, "no node named 'nope'"),
    (["--observer", "minmax", "-o", "x.txt"], 2, "give one of those file names"),
])
def test_cli_errors(tmp_path, capsys, extra, code, text):
    np.save(tmp_path / "calib.npy", kws_data(100)[:, 0])
    args = ["quantize", str(KWS), "--calib", str(tmp_path / "calib.npy"), "-o",
            str(tmp_path / "out.onnx")] + extra
    assert main(args) == code
    assert text in capsys.readouterr().err


def test_cli_bad_calibration_data_is_a_data_error(tmp_path, capsys):
    bad = kws_data(100)[:, 0]
    bad[3, 0, 0, 0] = np.nan
    np.save(tmp_path / "calib.npy", bad)
    assert main(["quantize", str(KWS), "--calib", str(tmp_path / "calib.npy"), "-o",
                 str(tmp_path / "out.onnx")]) == 7
    assert "NaN" in capsys.readouterr().err
