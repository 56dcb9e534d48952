"""ONNX import of hostile files (issue 16): each class ends in its named error, before
onnx's C++ shape inference or numpy can crash or allocate. The signal cases run in a
subprocess, where a SIGFPE / SIGSEGV would show as a negative return code."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import fuzz_models
from mcudeploy.errors import GraphError, ModelFormatError, UnsafePathError, UnsupportedError, UsageError
from mcudeploy.importers import load_model, parse_input_shape
from onnx_builders import make_model, save, single_op

X = {"x": [1, 2, 8, 8]}
W = {"w": np.ones((2, 2, 3, 3), np.float32)}


def _crashers() -> dict[str, onnx.ModelProto]:
    conv = lambda **a: make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", **a)], X, ["y"], W)  # noqa: E731
    pool = lambda op: make_model([helper.make_node(op, ["x"], ["y"], name="p", kernel_shape=[2, 2],  # noqa: E731
                                                   strides=[0, 0])], X, ["y"])
    return {
        "conv strides 0": conv(strides=[0, 0]), "conv group 0": conv(group=0),
        "conv dilations -1": conv(dilations=[-1, -1]), "maxpool strides 0": pool("MaxPool"),
        "averagepool strides 0": pool("AveragePool"), "lppool strides 0": pool("LpPool"),
        "depthtospace 2**62": make_model([helper.make_node("DepthToSpace", ["x"], ["y"], name="d",
                                                           blocksize=2**62)], X, ["y"]),
        "scan without body": make_model([helper.make_node("Scan", ["x"], ["y"], name="s",
                                                          num_scan_inputs=1)], X, ["y"]),
        "gathernd batch_dims -7": fuzz_models.known_crasher(_rng_for(2)),
    }


def _rng_for(kind: int) -> random.Random:
    """A seeded generator whose first ``randrange(8)`` is ``kind`` (for known_crasher)."""
    seed = next(s for s in range(1000) if random.Random(s).randrange(8) == kind)
    return random.Random(seed)


@pytest.mark.parametrize("name", sorted(_crashers()))
def test_attributes_that_crash_onnx_inference_are_refused_first(tmp_path, name):
    path = save(_crashers()[name], tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mcudeploy", "analyze", str(path), "--no-record"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    assert proc.stderr.strip().startswith("mcudeploy: error:") and "Traceback" not in proc.stderr


def _with_initializer(edit) -> onnx.ModelProto:
    model = single_op("MatMul", {"x": [1, 4]}, initializers={"w": np.ones((4, 2), np.float32)})
    edit(model.graph.initializer[0])
    return model


def _external(tmp_path: Path, entries: dict[str, str], data: bytes = bytes(32)) -> onnx.ModelProto:
    (tmp_path / "w.bin").write_bytes(data)

    def edit(tensor):
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in {"location": "w.bin", **entries}.items():
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return _with_initializer(edit)


@pytest.mark.parametrize("edit, error, words", [
    (lambda t: t.dims.__setitem__(slice(None), [1000, 1000, 1000]), UnsupportedError, "memory budget"),
    (lambda t: t.dims.__setitem__(slice(None), [4, 3]), ModelFormatError, "need 48 bytes of raw_data, but it holds 32"),
    (lambda t: setattr(t, "raw_data", t.raw_data[:5]), ModelFormatError, "holds 5"),
    (lambda t: setattr(t, "raw_data", t.raw_data + b"12"), ModelFormatError, "holds 34"),
    (lambda t: (t.ClearField("raw_data"), t.float_data.extend([1.0] * 3)), ModelFormatError, "values of float_data"),
    (lambda t: setattr(t, "data_type", 999), ModelFormatError, "element type 999"),
    (lambda t: t.dims.__setitem__(slice(None), [-4, -2]), ModelFormatError, "negative dimensions"),
])
def test_initializer_data_must_match_its_dims(tmp_path, edit, error, words):
    with pytest.raises(error, match=words):
        load_model(save(_with_initializer(edit), tmp_path))


@pytest.mark.parametrize("entries, data, error, words", [
    ({"location": "w\x00.bin"}, bytes(32), UnsafePathError, "NUL"),
    ({"offset": "-1"}, bytes(32), ModelFormatError, "must not be negative"),
    ({"offset": str(2**70)}, bytes(32), ModelFormatError, "holds 32 bytes"),
    ({"length": "-1"}, bytes(32), ModelFormatError, "must not be negative"),
    ({"length": str(2**40)}, bytes(32), ModelFormatError, "holds 32 bytes"),
    ({}, bytes(8), ModelFormatError, "holds 8"),
    ({"length": "1e3"}, bytes(32), ModelFormatError, "non-integer"),
])
def test_external_data_entries_are_checked_before_reading(tmp_path, entries, data, error, words):
    with pytest.raises(error, match=words):
        load_model(save(_external(tmp_path, entries, data), tmp_path))


def test_names_that_are_not_utf8_are_decoded_consistently(tmp_path):
    model = single_op("Relu", {"x": [1, 4]}, name="NODEXX")
    data = model.SerializeToString().replace(b"NODEXX", b"no\xff\xfede")
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    graph = load_model(path)
    assert graph.nodes[0].name == "no\\xff\\xfede"
    data = model.SerializeToString().replace(b'\x12\x01y', b'\x12\x01\xff').replace(b'\n\x01y', b'\n\x01\xff')
    path.write_bytes(data)   # the output tensor 'y' renamed to an invalid byte everywhere
    graph = load_model(path)
    assert graph.outputs[0].name == "\\xff"


def test_elem_type_of_an_input_that_is_no_onnx_type(tmp_path):
    model = single_op("Relu", {"x": [1, 4]})
    model.graph.input[0].type.tensor_type.elem_type = 999
    with pytest.raises(ModelFormatError, match="element type 999"):
        load_model(save(model, tmp_path))


def test_attribute_of_the_wrong_type(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c")
    node.attribute.append(helper.make_attribute("pads", 1))   # INT where INTS is due
    with pytest.raises(ModelFormatError, match="'pads' is of type INT; Conv declares it INTS"):
        load_model(save(make_model([node], X, ["y"], W), tmp_path))


@pytest.mark.parametrize("scales", [[1, 1, np.nan, 1], [1, 1, 0, 1], [1, 1, -2, 2], [1, 1, 1e9, 1]])
def test_resize_scales_must_be_positive_and_finite(tmp_path, scales):
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], name="r", mode="nearest")
    model = make_model([node], X, ["y"], {"s": np.array(scales, np.float32)})
    with pytest.raises(UnsupportedError, match="scale"):
        load_model(save(model, tmp_path))


@pytest.mark.parametrize("seed", range(6))
def test_folding_bombs_are_refused_before_they_allocate(tmp_path, seed):
    model = fuzz_models.folding_bomb(random.Random(seed))
    with pytest.raises(UnsupportedError, match="memory budget|unbounded|scale"):
        load_model(save(model, tmp_path))


def test_the_memory_budget_is_set_by_the_environment(tmp_path, monkeypatch):
    model = single_op("Relu", {"x": [1, 1024, 1024]})
    path = save(model, tmp_path)
    load_model(path)
    monkeypatch.setenv("MCUDEPLOY_MEMORY_BUDGET", "1M")
    with pytest.raises(UnsupportedError, match="4,194,304 bytes, more than the memory budget of 1,048,576"):
        load_model(path)


@pytest.mark.parametrize("text", ["x=1," + "9" * 20, "x=0,4", "x=1,2,3,4,5,6,7,8,9", "x=", "x", "=1,2"])
def test_input_shape_option_bounds(text):
    with pytest.raises(UsageError, match="--input-shape"):
        parse_input_shape(text)


def test_input_shape_within_bounds_but_over_the_budget(tmp_path):
    path = save(single_op("Relu", {"x": [1, "n"]}), tmp_path)
    with pytest.raises(UsageError, match="memory budget"):
        load_model(path, input_shapes={"x": (1, 2**31 - 1)})


@pytest.mark.parametrize("model, error, words", [
    (make_model([helper.make_node("Relu", ["w"], ["y"], name="r")], {}, ["y"],
                {"w": np.ones((1, 4), np.float32)}), UnsupportedError, "no inputs"),
    (make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 4]}, []),
     GraphError, "no outputs"),
    (make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 4]}, ["y", "w"],
                {"w": np.ones((1, 4), np.float32)}), UnsupportedError, "'w' is a constant"),
    (single_op("Frobnicate", {"x": [1, 4]}), UnsupportedError, "not supported"),
    (single_op("Add", {"x": [1, 4]}, input_names=["x", "missing"]), GraphError, "'missing'"),
])
def test_degenerate_graphs_and_consistent_exit_classes(tmp_path, model, error, words):
    with pytest.raises(error, match=words):
        load_model(save(model, tmp_path))
