"""Quantization parameters and float weights that no stage can use (issue 16): refused at
import (``ir.verify``) or at the start of ``quantize``, never an OverflowError / ValueError
in the fixed-point code or the C literal writer."""
from __future__ import annotations

import random

import numpy as np
import pytest
from onnx import helper

from fuzz_models import onnx_qdq_net
from mcudeploy.errors import GraphError, McuDeployError, UnsupportedError
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.quantize.quantizer import quantize_model
from onnx_builders import make_model, save
from tflite_builders import Op, Tensor, build_model

BAD_SCALES = [0.0, -0.5, float("nan"), float("inf"), 1e38, 1e-40]


def _int8_relu(scale: float, zero_point: int) -> Graph:
    graph = Graph("g")
    x = graph.add_input("x", DType.INT8, (1, 4), quant=QuantParams(np.array([scale]), np.array([zero_point])))
    graph.add_node("Relu", [x], name="relu")
    graph.outputs = [graph.nodes[0].outputs[0]]
    return graph


@pytest.mark.parametrize("scale, zero_point, words", [
    *[(s, 0, "quantization scale") for s in BAD_SCALES], (0.1, 1000, "zero point 1000"),
    (0.1, -129, "zero point -129")])
def test_verify_refuses_unusable_quantization(scale, zero_point, words):
    with pytest.raises(GraphError, match=words):
        verify(_int8_relu(scale, zero_point))
    verify(_int8_relu(0.1, -128))


@pytest.mark.parametrize("scale", BAD_SCALES)
def test_tflite_and_onnx_qdq_with_bad_scales_do_not_import(tmp_path, scale):
    tensors = [Tensor("x", (1, 8), "int8", quant=([scale], [0], 0)),
               Tensor("w", (4, 8), "int8", data=np.ones((4, 8), np.int8), quant=([0.02], [0], 0)),
               Tensor("b", (4,), "int32", data=np.zeros(4, np.int32), quant=([0.001], [0], 0)),
               Tensor("y", (1, 4), "int8", quant=([0.1], [0], 0))]
    (tmp_path / "m.tflite").write_bytes(build_model(tensors, [Op("FULLY_CONNECTED", [0, 1, 2], [3])], [0], [3]))
    with pytest.raises(GraphError, match="quantization scale"):
        load_model(tmp_path / "m.tflite")
    with pytest.raises(McuDeployError):
        load_model(save(onnx_qdq_net(random.Random(0), scale, 0), tmp_path))


@pytest.mark.parametrize("beta", [0.0, -1.0, float("nan"), float("inf")])
def test_softmax_beta_that_no_multiplier_represents(tmp_path, capsys, beta):
    from mcudeploy.cli.main import main

    tensors = [Tensor("x", (1, 10), "int8", quant=([0.05], [0], 0)),
               Tensor("y", (1, 10), "int8", quant=([1 / 256], [-128], 0))]
    (tmp_path / "m.tflite").write_bytes(build_model(tensors, [Op("SOFTMAX", [0], [1], {"beta": beta})], [0], [1]))
    code = main(["generate", str(tmp_path / "m.tflite"), "-o", str(tmp_path / "gen"), "--no-record"])
    assert code == 4, capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err


def _float_model(variance: float = 1.0, weight: float = 1.0):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["y"], name="bn")]
    inits = {"w": np.full((2, 3, 1, 1), weight, np.float32), "s": np.ones(2, np.float32),
             "o": np.zeros(2, np.float32), "m": np.zeros(2, np.float32),
             "v": np.array([variance, 1.0], np.float32)}
    return make_model(nodes, {"x": [1, 3, 4, 4]}, ["y"], inits, opset=13)


@pytest.mark.parametrize("model, words", [
    (_float_model(weight=float("nan")), "NaN / Inf"),
    (_float_model(weight=float("inf")), "NaN / Inf"),
    (_float_model(variance=-4.0), "NaN / Inf"),
    (_float_model(weight=3e38), "NaN / Inf"),
])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # sqrt(-4) and the float32 overflow, on purpose
def test_quantize_refuses_non_finite_weights_and_ranges(tmp_path, model, words):
    graph = load_model(save(model, tmp_path))
    samples = [{"x": np.ones((1, 3, 4, 4), np.float32)}] * 2
    with pytest.raises(GraphError, match=words):
        quantize_model(graph, samples)


def test_quantize_refuses_a_float16_input(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 4]},
                       {"y": np.float16}, input_dtypes={"x": np.float16})
    graph = load_model(save(model, tmp_path))
    with pytest.raises(UnsupportedError, match="float16"):
        quantize_model(graph, [{"x": np.ones((1, 4), np.float16)}])
