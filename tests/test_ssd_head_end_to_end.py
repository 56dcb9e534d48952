"""An int8 SSD-style detection head built in code, as Keras exports write it: two feature
levels, per level a box and a class 1x1 convolution whose outputs are reshaped to
``[batch, anchors, 4]`` / ``[batch, anchors, 3]`` through ``SHAPE -> STRIDED_SLICE -> PACK
-> RESHAPE``, the levels concatenated along the anchors, a LOGISTIC on the class scores.

It must ``analyze`` (the shape arithmetic folded away at import), ``run --engine int``
bit-exact with TensorFlow Lite Micro, and ``generate`` C code that, built on the host with
ASan + UBSan, is bit-exact with the integer reference.
"""
from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest

from conftest import require
from mcudeploy.cli.main import main
from mcudeploy.driver import deploy
from mcudeploy.importers import load_model
from mcudeploy.reference.int_executor import run_int
from mcudeploy.report.analysis import analyze_graph
from mcudeploy.validate.c_runner import run_host
from tflite_builders import Op, Tensor, build_model

tflm = require("tflite_micro.python.tflite_micro.runtime")

INT32 = 2
CLASSES, ANCHORS = 3, 3


class Model:
    """Tensors and operators of a TFLite model under construction."""

    def __init__(self) -> None:
        self.tensors: list[Tensor] = []
        self.ops: list[Op] = []

    def tensor(self, name, shape, dtype="int8", data=None, quant=None, **extra) -> int:
        self.tensors.append(Tensor(name, shape, dtype, data=data, quant=quant, **extra))
        return len(self.tensors) - 1

    def op(self, op, inputs, output, options=None) -> int:
        self.ops.append(Op(op, inputs, [output], options or {}))
        return output


def q(scale, zero_point=0):
    return ([scale], [zero_point], 0)


def _conv_1x1(model: Model, rng, x: int, channels_in: int, channels_out: int, hw: tuple, name: str) -> int:
    scales = list(rng.uniform(0.003, 0.01, channels_out))
    w = model.tensor(f"{name}/w", (channels_out, 1, 1, channels_in),
                     data=rng.integers(-127, 128, (channels_out, 1, 1, channels_in)).astype(np.int8),
                     quant=(scales, [0] * channels_out, 0))
    b = model.tensor(f"{name}/b", (channels_out,), "int32",
                     data=rng.integers(-2000, 2000, channels_out).astype(np.int32))
    y = model.tensor(name, (1, *hw, channels_out), quant=q(0.1, 0))
    return model.op("CONV_2D", [x, w, b], y, {"padding": 1, "stride_h": 1, "stride_w": 1})


def _keras_reshape(model: Model, x: int, hw: tuple, channels: int, last: int, name: str) -> int:
    """``RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x), [0], [1], shrink), -1, last))``."""
    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    shape = model.op("SHAPE", [x], model.tensor(f"{name}/shape", (4,), "int32"), {"out_type": INT32})
    begin = model.tensor(f"{name}/begin", (1,), "int32", i32(0))
    end = model.tensor(f"{name}/end", (1,), "int32", i32(1))
    stride = model.tensor(f"{name}/stride", (1,), "int32", i32(1))
    batch = model.op("STRIDED_SLICE", [shape, begin, end, stride], model.tensor(f"{name}/batch", (), "int32"),
                     {"shrink_axis_mask": 1})
    minus_one = model.tensor(f"{name}/minus_one", (), "int32", np.array(-1, np.int32))
    width = model.tensor(f"{name}/width", (), "int32", np.array(last, np.int32))
    packed = model.op("PACK", [batch, minus_one, width], model.tensor(f"{name}/packed", (3,), "int32"),
                      {"values_count": 3, "axis": 0})
    anchors = hw[0] * hw[1] * channels // last
    return model.op("RESHAPE", [x, packed], model.tensor(name, (1, anchors, last), quant=q(0.1, 0)))


def ssd_head() -> bytes:
    rng = np.random.default_rng(15)
    model = Model()
    x = model.tensor("image_features", (1, 8, 8, 16), quant=q(0.05, -3), shape_signature=(-1, 8, 8, 16))
    pooled = model.op("AVERAGE_POOL_2D", [x], model.tensor("level2", (1, 4, 4, 16), quant=q(0.05, -3)),
                      {"padding": 1, "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2})
    boxes, classes = [], []
    for level, (feature, hw) in enumerate([(x, (8, 8)), (pooled, (4, 4))]):
        box = _conv_1x1(model, rng, feature, 16, ANCHORS * 4, hw, f"box{level}")
        cls = _conv_1x1(model, rng, feature, 16, ANCHORS * CLASSES, hw, f"class{level}")
        boxes.append(_keras_reshape(model, box, hw, ANCHORS * 4, 4, f"box{level}/reshaped"))
        classes.append(_keras_reshape(model, cls, hw, ANCHORS * CLASSES, CLASSES, f"class{level}/reshaped"))
    total = (8 * 8 + 4 * 4) * ANCHORS
    all_boxes = model.op("CONCATENATION", boxes, model.tensor("boxes", (1, total, 4), quant=q(0.1, 0)), {"axis": 1})
    logits = model.op("CONCATENATION", classes, model.tensor("logits", (1, total, CLASSES), quant=q(0.1, 0)),
                      {"axis": 1})
    scores = model.op("LOGISTIC", [logits], model.tensor("scores", (1, total, CLASSES), quant=q(1 / 256, -128)))
    return build_model(model.tensors, model.ops, [x], [all_boxes, scores])


@pytest.fixture
def head(tmp_path):
    logging.disable(logging.WARNING)  # the dynamic batch dimension note
    path = tmp_path / "ssd_head.tflite"
    path.write_bytes(ssd_head())
    yield path
    logging.disable(logging.NOTSET)


def test_analyze_shows_the_folded_head(head, capsys):
    graph = load_model(head)
    ops = [node.op for node in graph.nodes]
    assert ops.count("Conv") == 4 and ops.count("Reshape") == 4 and ops.count("Concat") == 2
    assert not set(ops) & {"Slice", "Unsqueeze", "Cast"}             # SHAPE / STRIDED_SLICE / PACK folded
    assert [v.shape for v in graph.outputs] == [(1, 240, 4), (1, 240, 3)]
    analysis = analyze_graph(graph)
    assert analysis.total_macc == sum(layer.macc for layer in analysis.layers) > 0
    assert main(["analyze", str(head)]) == 0
    assert "Reshape" in capsys.readouterr().out


def test_int_engine_matches_tflm_and_generated_code_matches_it(head, tmp_path):
    graph = load_model(head)
    rng = np.random.default_rng(0)
    batch = rng.integers(-128, 128, (6, 1, 8, 8, 16)).astype(np.int8)
    source, target = tmp_path / "in.npy", tmp_path / "out.npz"
    np.save(source, batch)
    assert main(["run", str(head), "--inputs", str(source), "-o", str(target), "--engine", "int"]) == 0
    with np.load(target) as loaded:
        ours = {name: loaded[name] for name in loaded.files}
    interpreter = tflm.Interpreter.from_file(str(head))
    for sample in range(len(batch)):
        interpreter.set_input(batch[sample], 0)
        interpreter.invoke()
        for index, value in enumerate(graph.outputs):
            reference = interpreter.get_output(index)
            assert ours[value.name][sample].tobytes() == reference.tobytes(), (value.name, sample)
    assert len(np.unique(ours["scores"])) > 10 and len(np.unique(ours["boxes"])) > 10

    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("host gcc / make not installed")
    result = run_host(deploy(graph), {graph.inputs[0].name: batch}, sanitize=True)
    expected = run_int(graph, {graph.inputs[0].name: batch}, batch=True)
    for value in graph.outputs:
        assert np.array_equal(result.outputs[value.name], expected[value.name]), value.name
        assert np.array_equal(expected[value.name], ours[value.name])
