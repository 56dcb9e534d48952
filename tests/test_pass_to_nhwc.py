"""ToNHWC: NCHW CNNs become NHWC with Transposes only at the graph ends (or none)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.passes import ToNHWC

RNG = np.random.default_rng(5)
C = 4


def _w(graph: Graph, shape, name: str = "w"):
    return graph.add_constant(name, RNG.standard_normal(shape).astype(np.float32))


def _conv(graph: Graph, x, out_ch: int = C, *, k: int = 3, group: int = 1, **attrs):
    in_ch = x.shape[1]
    weights = _w(graph, (out_ch, in_ch // group, k, k))
    return graph.add_node("Conv", [x, weights, _w(graph, (out_ch,), "b")],
                          {"pads": (k // 2,) * 4, "group": group, **attrs}).outputs[0]


def _start(name: str, shape=(1, C, 6, 6)) -> tuple[Graph, object]:
    graph = Graph(name)
    return graph, graph.add_input("x", DType.FLOAT32, shape)


def residual() -> Graph:
    graph, x = _start("residual")
    a = _conv(graph, x, activation_min=0.0, activation_max=6.0)
    b = _conv(graph, a, group=C)
    s = graph.add_node("Add", [a, b]).outputs[0]
    graph.outputs = [graph.add_node("Relu", [s], output_names=["y"]).outputs[0]]
    return graph


def concat_split_slice() -> Graph:
    graph, x = _start("concat")
    a, b = _conv(graph, x), _conv(graph, x, 2, k=1)
    cat = graph.add_node("Concat", [a, b], {"axis": 1}).outputs[0]
    parts = graph.add_node("Split", [cat], {"axis": 1, "split": (2, 4)}, outputs=2).outputs
    sl = graph.add_node("Slice", [parts[1]], {"starts": (1,), "ends": (3,), "axes": (1,),
                                              "steps": (1,)}).outputs[0]
    padded = graph.add_node("Pad", [sl], {"pads": (0, 1, 1, 0, 0, 0, 1, 2)}).outputs[0]
    graph.outputs = [_conv(graph, parts[0], 3), _conv(graph, padded, 2)]
    return graph


def classifier_head() -> Graph:
    graph, x = _start("head")
    a = _conv(graph, x, 8, activation_min=0.0)
    pooled = graph.add_node("GlobalAveragePool", [a]).outputs[0]
    flat = graph.add_node("Flatten", [pooled]).outputs[0]
    logits = graph.add_node("Gemm", [flat, _w(graph, (5, 8)), _w(graph, (5,), "c")], {"transB": 1})
    graph.outputs = list(graph.add_node("Softmax", [logits.outputs[0]], output_names=["p"]).outputs)
    return graph


def upsample_and_pools() -> Graph:
    graph, x = _start("upsample")
    padded = graph.add_node("Pad", [x], {"pads": (0, 0, 1, 1, 0, 0, 1, 1)}).outputs[0]
    a = _conv(graph, padded, strides=(2, 2))
    m = graph.add_node("MaxPool", [a], {"kernel_shape": (2, 2), "pads": (0, 0, 1, 1)}).outputs[0]
    up = graph.add_node("Resize", [m], {"sizes": (1, C, 6, 6), "mode": "linear"}).outputs[0]
    avg = graph.add_node("AveragePool", [up], {"kernel_shape": (3, 3), "pads": (1, 1, 1, 1)}).outputs[0]
    graph.outputs = [_conv(graph, avg)]
    return graph


def elementwise_mix() -> Graph:
    graph, x = _start("mix")
    a = _conv(graph, x)
    scaled = graph.add_node("Mul", [a, _w(graph, (C, 1, 1), "k")]).outputs[0]
    shifted = graph.add_node("Sub", [scaled, _w(graph, (1,), "s")]).outputs[0]
    prelu = graph.add_node("PRelu", [shifted, _w(graph, (C, 1, 1), "slope")]).outputs[0]
    bn = graph.add_node("BatchNormalization", [prelu, _w(graph, (C,), "g"), _w(graph, (C,), "bb"),
                                               _w(graph, (C,), "m"),
                                               graph.add_constant("v", np.ones(C, np.float32))])
    soft = graph.add_node("Softmax", [bn.outputs[0]], {"axis": 1}).outputs[0]
    mean = graph.add_node("ReduceMean", [soft], {"axes": (1,)}).outputs[0]
    sig = graph.add_node("Sigmoid", [mean]).outputs[0]
    graph.outputs = [graph.add_node("Mul", [soft, sig]).outputs[0]]
    return graph


def transposed_conv_and_depth_to_space() -> Graph:
    graph, x = _start("deconv")
    w = _w(graph, (C, 3, 3, 3))  # [C, O/g, kH, kW] with group 2 -> O = 6
    up = graph.add_node("ConvTranspose", [x, w], {"group": 2, "strides": (2, 2), "pads": (1, 1, 1, 1),
                                                 "output_padding": (1, 1)}).outputs[0]
    a = _conv(graph, up, 8, k=1)
    for mode in ("DCR", "CRD"):
        d2s = graph.add_node("DepthToSpace", [a], {"blocksize": 2, "mode": mode}).outputs[0]
        graph.outputs.append(_conv(graph, d2s, 1, k=1))
    return graph


def quantized_weights() -> Graph:
    graph, x = _start("qdq")
    q_weights = graph.add_constant("wq", RNG.integers(-127, 128, (C, C, 3, 3)).astype(np.int8),
                                   quant=QuantParams(RNG.uniform(0.01, 0.02, C).astype(np.float32),
                                                     np.zeros(C, np.int64), axis=0))
    weights = graph.add_node("DequantizeLinear", [q_weights]).outputs[0]
    a = graph.add_node("Conv", [x, weights], {"pads": (1, 1, 1, 1)}).outputs[0]
    q = graph.add_node("QuantizeLinear", [a])
    q.outputs[0].quant = QuantParams(np.float32(0.05), 3)
    graph.outputs = list(graph.add_node("DequantizeLinear", [q.outputs[0]]).outputs)
    return graph


def input_skip() -> Graph:
    graph, x = _start("input_skip")
    a = _conv(graph, x)
    s = graph.add_node("Add", [x, a]).outputs[0]
    graph.outputs = [_conv(graph, s)]
    return graph


CNNS: dict[str, Callable[[], Graph]] = {f.__name__: f for f in (
    residual, input_skip, concat_split_slice, classifier_head, upsample_and_pools, elementwise_mix,
    transposed_conv_and_depth_to_space, quantized_weights)}
LAYOUT_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
              "BatchNormalization", "DepthToSpace"}


def inner_transposes(graph: Graph) -> list[str]:
    """Transposes other than one right after a graph input or right before a graph output."""
    inputs, outputs = set(map(id, graph.inputs)), set(map(id, graph.outputs))
    return [n.name for n in graph.nodes if n.op == "Transpose"
            and id(n.inputs[0]) not in inputs and id(n.outputs[0]) not in outputs]


@pytest.mark.parametrize("name", sorted(CNNS))
def test_no_transpose_inside(name):
    graph = CNNS[name]()
    before, changed = apply(graph, ToNHWC())
    assert changed == ["to_nhwc"]
    assert all(n.attrs["layout"] == "NHWC" for n in graph.nodes if n.op in LAYOUT_OPS)
    assert inner_transposes(graph) == []
    for value in graph.inputs:
        assert sum(1 for user, _ in value.uses if user.op == "Transpose") <= 1
    assert [v.name for v in graph.outputs] == [v.name for v in before.outputs]
    assert_same_function(before, graph)


def _to_nhwc_array(name: str, array: np.ndarray) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if array.ndim == 4 else array


@pytest.mark.parametrize("name", sorted(CNNS))
def test_change_io_leaves_no_transpose(name):
    graph = CNNS[name]()
    before, _ = apply(graph, ToNHWC(change_io=True))
    assert op_counts(graph)["Transpose"] == 0
    assert graph.inputs[0].layout == "NHWC" and graph.inputs[0].shape == (1, 6, 6, C)
    assert all(v.layout == "NHWC" for v in graph.outputs if v.rank == 4)
    assert_same_function(before, graph, feed_map=_to_nhwc_array, output_map=_to_nhwc_array)


def test_weights_become_new_nhwc_constants():
    graph = residual()
    old = [n.inputs[1] for n in graph.nodes if n.op == "Conv"]
    apply(graph, ToNHWC())
    new = [n.inputs[1] for n in graph.nodes if n.op == "Conv"]
    for before, after in zip(old, new):
        assert after is not before and after.shape == tuple(before.shape[i] for i in (0, 2, 3, 1))
        np.testing.assert_array_equal(after.const, before.const.transpose(0, 2, 3, 1))
        assert before.const.flags.c_contiguous  # the original array is untouched


def test_quantized_weights_stay_int8_with_their_axis():
    graph = quantized_weights()
    apply(graph, ToNHWC())
    weights = next(n for n in graph.nodes if n.op == "DequantizeLinear" and n.inputs[0].is_constant)
    assert weights.inputs[0].dtype == DType.INT8 and weights.inputs[0].shape == (C, 3, 3, C)
    assert weights.inputs[0].quant.axis == 0


def test_nhwc_graph_is_left_alone():
    graph = Graph("already_nhwc")
    x = graph.add_input("x", DType.FLOAT32, (1, 6, 6, C))
    w = _w(graph, (C, 3, 3, C))
    graph.outputs = list(graph.add_node("Conv", [x, w], {"layout": "NHWC"}).outputs)
    _, changed = apply(graph, ToNHWC())
    assert changed == [] and op_counts(graph) == {"Conv": 1}


def test_blocking_reshape_keeps_its_transpose():
    graph, x = _start("blocked")
    a = _conv(graph, x)
    flat = graph.add_node("Reshape", [a], {"shape": (1, C * 36)}).outputs[0]
    graph.outputs = list(graph.add_node("Relu", [flat]).outputs)
    before, _ = apply(graph, ToNHWC())
    assert op_counts(graph)["Transpose"] == 2  # after the input, before the Reshape
    assert_same_function(before, graph)
