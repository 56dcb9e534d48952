"""Broken or unsupported ONNX files: each must raise the right mcudeploy error whose message
names the file or the node, through ``load_model`` and through ``mcudeploy analyze`` (one
``mcudeploy: error: ...`` line, a nonzero exit code, no traceback)."""
from __future__ import annotations

import builtins
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import shared_model
from mcudeploy.errors import GraphError, McuDeployError, ModelFormatError, UnsafePathError, UnsupportedError
from mcudeploy.importers import load_model
from onnx_builders import make_model, single_op


def _loop_model() -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 4])])
    loop = helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body, name="my_loop")
    inits = {"trip": np.int64(3), "cond": np.bool_(True)}
    return make_model([loop], {"x": [1, 4]}, ["y"], inits, opset=13)


def _unsupported_op_model() -> onnx.ModelProto:
    """GridSample: well-formed, static shapes, but not an op mcudeploy supports."""
    return make_model([helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp")],
                      {"x": [1, 1, 4, 4], "grid": [1, 4, 4, 2]}, ["y"])


def _cycle_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"),
             helper.make_node("Relu", ["a"], ["b"], name="second"),
             helper.make_node("Relu", ["b"], ["y"], name="third")]
    return make_model(nodes, {"x": [1, 4]}, ["y"])


def _external_data_model(location: str) -> onnx.ModelProto:
    model = single_op("MatMul", {"x": [1, 4]}, initializers={"w": np.ones((4, 2), np.float32)})
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    return model


def _write(folder: Path, name: str, content: bytes | onnx.ModelProto) -> Path:
    path = folder / name
    path.write_bytes(content if isinstance(content, bytes) else content.SerializeToString())
    return path


def _truncated(folder: Path) -> Path:
    data = shared_model("onnx/mobilenetv2_0.5_128.onnx").read_bytes()
    return _write(folder, "truncated.onnx", data[: len(data) // 2])


# name -> (build file in tmp_path, error class, text the message must contain)
CASES = {
    "empty": (lambda d: _write(d, "empty.onnx", b""), ModelFormatError, "empty.onnx"),
    "random_bytes": (lambda d: _write(d, "random.onnx", np.random.default_rng(7).bytes(4096)),
                     ModelFormatError, "random.onnx"),
    "truncated": (_truncated, ModelFormatError, "truncated.onnx: it is not a valid, complete"),
    "loop": (lambda d: _write(d, "loop.onnx", _loop_model()), UnsupportedError,
             "'my_loop' (Loop): control flow"),
    "unsupported_op": (lambda d: _write(d, "grid_sample.onnx", _unsupported_op_model()), UnsupportedError,
                       "'warp' (GridSample): op 'GridSample' is not supported"),
    "made_up_op": (lambda d: _write(d, "magic.onnx", single_op("Frobnicate", {"x": [1, 2]})),
                   UnsupportedError, "magic.onnx: node 'op' (Frobnicate)"),
    "dynamic_spatial": (lambda d: _write(d, "dyn.onnx", single_op("Relu", {"img": [1, 3, "H", 8]})),
                        UnsupportedError, "'img' has a dynamic dimension 2"),
    "zero_dimension": (lambda d: _write(d, "zero.onnx", single_op("Relu", {"img": [1, 0, 4]})),
                       GraphError, "input 'img' declares dimension 1 as 0"),
    "negative_dimension": (lambda d: _write(d, "neg.onnx", single_op("Relu", {"img": [1, 3, -2]})),
                           GraphError, "input 'img' declares dimension 2 as -2"),
    "cycle": (lambda d: _write(d, "cycle.onnx", _cycle_model()), GraphError,
              "cycle through node(s) 'first', 'second';"),
    "external_parent": (lambda d: _write(d, "ext.onnx", _external_data_model("../../etc/passwd")),
                        UnsafePathError, "ext.onnx: tensor 'w'"),
    "external_absolute": (lambda d: _write(d, "abs.onnx", _external_data_model("/etc/passwd")),
                          UnsafePathError, "'/etc/passwd', which is an absolute path"),
    "external_missing": (lambda d: _write(d, "gone.onnx", _external_data_model("gone.bin")),
                         ModelFormatError, "gone.onnx: tensor 'w' stores its data in 'gone.bin'"),
    "inconsistent_weights": (lambda d: _write(d, "bad_w.onnx", single_op(
        "Conv", {"x": [1, 3, 5, 5]}, initializers={"w": np.ones((2, 4, 3, 3), np.float32)})),
        GraphError, "bad_w.onnx: node 'op' (Conv): input has 3 channels"),
    "foreign_domain": (lambda d: _write(d, "ms.onnx", _foreign_domain_model()), UnsupportedError,
                       "node 'op' is op 'Relu' of domain 'com.microsoft'"),
}


def _foreign_domain_model() -> onnx.ModelProto:
    model = single_op("Relu", {"x": [1, 3]})
    model.graph.node[0].domain = "com.microsoft"
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_load_model_refuses(tmp_path, case):
    build, error, text = CASES[case]
    path = build(tmp_path)
    with pytest.raises(error) as info:
        load_model(path)
    assert text in str(info.value)
    assert isinstance(info.value, McuDeployError)


def test_dynamic_dimension_message_suggests_input_shape(tmp_path):
    path = CASES["dynamic_spatial"][0](tmp_path)
    with pytest.raises(UnsupportedError, match=r"--input-shape img=1,3,224,224"):
        load_model(path)
    assert load_model(path, input_shapes={"img": (1, 3, 5, 8)}).inputs[0].shape == (1, 3, 5, 8)


def test_unsafe_external_data_is_never_opened(tmp_path, monkeypatch):
    """The location is refused before any file outside the model folder is opened, also
    through a symlink that points out of the folder."""
    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.ones((4, 2), np.float32).tobytes())
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "link.bin").symlink_to(secret)
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(os.path.realpath(file) if isinstance(file, (str, Path)) else str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    for location in ("../secret.bin", "link.bin", str(secret)):
        path = _write(folder, "ext.onnx", _external_data_model(location))
        with pytest.raises(UnsafePathError, match=f"tensor 'w'.*{location}"):
            load_model(path)
    assert str(secret.resolve()) not in opened


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_cli_reports_one_error_line(tmp_path, case, capsys):
    """In-process ``mcudeploy analyze FILE`` (the same code path as the console script)."""
    from mcudeploy.cli.main import main

    build, error, text = CASES[case]
    code = main(["analyze", str(build(tmp_path))])
    stderr = capsys.readouterr().err
    assert code == error.exit_code != 0
    assert "mcudeploy: error: " in stderr and text in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("case", ["truncated", "loop"])
def test_cli_subprocess(tmp_path, case):
    """The real ``python -m mcudeploy analyze FILE`` process: one error line, exit code."""
    build, error, text = CASES[case]
    result = subprocess.run([sys.executable, "-m", "mcudeploy", "analyze", str(build(tmp_path))],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == error.exit_code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("mcudeploy: error: ") == 1 and text in result.stderr
