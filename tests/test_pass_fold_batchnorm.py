"""FoldBatchNorm: BN folded into Conv / ConvTranspose / Gemm weights, else a Mul + Add."""
from __future__ import annotations

import numpy as np
import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph
from mcudeploy.passes import FoldBatchNorm

RNG = np.random.default_rng(1)


def _bn_params(graph: Graph, channels: int) -> list:
    gamma = RNG.uniform(0.5, 2.0, channels).astype(np.float32)
    beta = RNG.standard_normal(channels).astype(np.float32)
    mean = RNG.standard_normal(channels).astype(np.float32)
    var = RNG.uniform(0.1, 3.0, channels).astype(np.float32)
    return [graph.add_constant(n, a) for n, a in
            zip(("gamma", "beta", "mean", "var"), (gamma, beta, mean, var))]


def _weights(shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def conv_bn(op: str, layout: str, group: int, bias: bool) -> Graph:
    graph = Graph("conv_bn")
    in_ch, out_ch = 4, 6
    shape = (1, in_ch, 5, 5) if layout == "NCHW" else (1, 5, 5, in_ch)
    x = graph.add_input("x", DType.FLOAT32, shape)
    if op == "Conv":
        w_shape = (out_ch, in_ch // group, 3, 3) if layout == "NCHW" else (out_ch, 3, 3, in_ch // group)
    else:
        w_shape = (in_ch, out_ch // group, 3, 3) if layout == "NCHW" else (out_ch, 3, 3, in_ch // group)
    inputs = [x, graph.add_constant("w", _weights(w_shape))]
    if bias:
        inputs.append(graph.add_constant("b", _weights((out_ch,))))
    conv = graph.add_node(op, inputs, {"layout": layout, "group": group, "pads": (1, 1, 1, 1)},
                          name="conv")
    bn = graph.add_node("BatchNormalization", [conv.outputs[0], *_bn_params(graph, out_ch)],
                        {"layout": layout, "epsilon": 1e-3}, name="bn", output_names=["y"])
    graph.outputs = [bn.outputs[0]]
    return graph


@pytest.mark.parametrize("op", ["Conv", "ConvTranspose"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_bn_folds(op, layout, group, bias):
    graph = conv_bn(op, layout, group, bias)
    before, changed = apply(graph, FoldBatchNorm())
    assert changed == ["fold_batchnorm"]
    assert op_counts(graph) == {op: 1}
    assert [v.name for v in graph.outputs] == ["y"] and graph.outputs[0].producer.name == "conv"
    assert before.node("conv").inputs[1].const is not graph.node("conv").inputs[1].const
    assert_same_function(before, graph)


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias_shape", [None, (6,), (1, 6), ()])
def test_gemm_bn_folds(trans_b, bias_shape):
    graph = Graph("gemm_bn")
    x = graph.add_input("x", DType.FLOAT32, (3, 5))
    inputs = [x, graph.add_constant("w", _weights((6, 5) if trans_b else (5, 6)))]
    if bias_shape is not None:
        inputs.append(graph.add_constant("c", _weights(bias_shape)))
    gemm = graph.add_node("Gemm", inputs, {"transB": trans_b, "alpha": 0.5, "beta": 2.0}, name="gemm")
    bn = graph.add_node("BatchNormalization", [gemm.outputs[0], *_bn_params(graph, 6)],
                        name="bn", output_names=["y"])
    graph.outputs = [bn.outputs[0]]
    before, _ = apply(graph, FoldBatchNorm())
    assert op_counts(graph) == {"Gemm": 1}
    assert_same_function(before, graph)


def _bn_after(kind: str, layout: str) -> Graph:
    """A BN that must not fold: after a Relu, after a Conv with two readers, after a Conv
    with a fused clamp."""
    graph = Graph(kind)
    shape = (1, 4, 5, 5) if layout == "NCHW" else (1, 5, 5, 4)
    x = graph.add_input("x", DType.FLOAT32, shape)
    w_shape = (4, 4, 1, 1) if layout == "NCHW" else (4, 1, 1, 4)
    attrs = {"layout": layout}
    if kind == "clamped":
        attrs["activation_min"] = 0.0
    if kind == "relu":
        source = graph.add_node("Relu", [x], name="relu").outputs[0]
    else:
        source = graph.add_node("Conv", [x, graph.add_constant("w", _weights(w_shape))], attrs,
                                name="conv").outputs[0]
    bn = graph.add_node("BatchNormalization", [source, *_bn_params(graph, 4)], {"layout": layout},
                        name="bn", output_names=["y"])
    graph.outputs = [bn.outputs[0]]
    if kind == "two_users":
        graph.outputs.append(graph.add_node("Relu", [source], name="other").outputs[0])
    return graph


@pytest.mark.parametrize("kind", ["relu", "two_users", "clamped"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_unfoldable_bn_becomes_scale_shift(kind, layout):
    graph = _bn_after(kind, layout)
    before, _ = apply(graph, FoldBatchNorm())
    counts = op_counts(graph)
    assert "BatchNormalization" not in counts and counts["Mul"] == 1 and counts["Add"] == 1
    mul = next(n for n in graph.nodes if n.op == "Mul")
    channel_axis = 1 if layout == "NCHW" else 3
    assert mul.inputs[1].shape[channel_axis] == 4 and mul.inputs[1].size == 4
    assert graph.outputs[0].name == "y" and graph.outputs[0].producer.op == "Add"
    assert_same_function(before, graph)


def test_bn_with_non_constant_parameters_is_left_alone():
    graph = Graph("dynamic")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 3, 3))
    gamma = graph.add_input("gamma", DType.FLOAT32, (4,))
    params = [gamma] + _bn_params(graph, 4)[1:]
    graph.outputs = list(graph.add_node("BatchNormalization", [x, *params]).outputs)
    _, changed = apply(graph, FoldBatchNorm())
    assert changed == [] and op_counts(graph) == {"BatchNormalization": 1}
