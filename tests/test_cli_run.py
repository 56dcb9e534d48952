"""``mcudeploy run``: round trips on a real int8 model and the float example, engine choice,
and the errors it names."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import require, shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import DataError, UsageError
from mcudeploy.importers import load_model
from mcudeploy.reference import run_float
from mcudeploy.reference.int_executor import run_int

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "kws_cnn.onnx"


def run(tmp_path: Path, model: Path, inputs: dict[str, np.ndarray] | np.ndarray, *extra: str):
    """Run the command; returns (exit code, outputs by name or None)."""
    if isinstance(inputs, dict):
        source = tmp_path / "in.npz"
        np.savez(source, **inputs)
    else:
        source = tmp_path / "in.npy"
        np.save(source, inputs)
    target = tmp_path / "out.npz"
    target.unlink(missing_ok=True)
    code = main(["run", str(model), "--inputs", str(source), "-o", str(target), *extra])
    if code != 0:
        return code, None
    with np.load(target) as loaded:
        return code, {key: loaded[key] for key in loaded.files}


def test_int8_model_round_trip_keeps_int8(tmp_path):
    path = shared_model("mlperf_tiny/resnet8_int8.tflite")
    graph = load_model(path)
    x = np.random.default_rng(0).integers(-128, 128, (5, 1, 32, 32, 3)).astype(np.int8)
    code, outputs = run(tmp_path, path, {graph.inputs[0].name: x})
    assert code == 0 and list(outputs) == ["Identity_int8"]
    expected = run_int(graph, {graph.inputs[0].name: x}, batch=True)["Identity_int8"]
    assert outputs["Identity_int8"].dtype == np.int8 and outputs["Identity_int8"].shape == (5, 1, 10)
    np.testing.assert_array_equal(outputs["Identity_int8"], expected)
    # [N, 32, 32, 3] (batch axis replaced) and one unbatched sample give the same numbers.
    assert np.array_equal(run(tmp_path, path, x[:, 0])[1]["Identity_int8"], expected)
    code, single = run(tmp_path, path, x[2], "--engine", "int")
    assert single["Identity_int8"].shape == (1, 10)
    np.testing.assert_array_equal(single["Identity_int8"], expected[2])


def test_float_example_round_trip_matches_run_float_and_onnxruntime(tmp_path):
    onnxruntime = require("onnxruntime")
    x = np.random.default_rng(1).normal(size=(3, 1, 1, 49, 10)).astype(np.float32)
    code, outputs = run(tmp_path, EXAMPLE, {"input": x})
    assert code == 0 and outputs["probabilities"].dtype == np.float32
    graph = load_model(EXAMPLE)
    ours = np.stack([run_float(graph, {"input": s})["probabilities"] for s in x])
    np.testing.assert_array_equal(outputs["probabilities"], ours)
    session = onnxruntime.InferenceSession(str(EXAMPLE), providers=["CPUExecutionProvider"])
    reference = np.stack([session.run(None, {"input": s})[0] for s in x])
    np.testing.assert_allclose(outputs["probabilities"], reference, atol=1e-5)


def test_output_names_with_colons(tmp_path):
    path = shared_model("mlperf_tiny/streaming_wakeword_int8.tflite")
    code, outputs = run(tmp_path, path, np.zeros((2, 30, 1, 40), np.int8))
    assert code == 0 and outputs["StatefulPartitionedCall:0"].shape == (2, 1, 3)


@pytest.mark.parametrize("model, data, engine, code, message", [
    ("example", np.zeros((1, 1, 49, 10), np.float32), "int", UsageError.exit_code,
     "quantize it first with mcudeploy quantize"),
    ("resnet8", np.zeros((1, 32, 32, 3), np.int8), "float", UsageError.exit_code,
     "full-integer quantized model"),
    ("resnet8", np.zeros((1, 32, 32, 3), np.float32), None, DataError.exit_code,
     "input 'input_1_int8' is float32, the input is int8"),
    ("example", np.zeros((2, 49, 11), np.float32), None, DataError.exit_code,
     "input 'input' has shape \\[2, 49, 11\\]"),
    ("example", np.zeros((1, 1, 49, 10), np.float32), "tpu-v9", UsageError.exit_code,
     "unknown engine"),
])
def test_errors_are_named(tmp_path, capsys, model, data, engine, code, message):
    path = EXAMPLE if model == "example" else shared_model("mlperf_tiny/resnet8_int8.tflite")
    extra = ["--engine", engine] if engine else []
    assert run(tmp_path, path, data, *extra)[0] == code
    assert re.search(message, capsys.readouterr().err)


def test_missing_output_folder(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((1, 1, 49, 10), np.float32))
    code = main(["run", str(EXAMPLE), "--inputs", str(tmp_path / "x.npy"),
                 "-o", str(tmp_path / "nowhere" / "y.npz")])
    assert code == UsageError.exit_code and "does not exist" in capsys.readouterr().err
