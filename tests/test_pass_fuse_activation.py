"""FuseActivation: Relu / Clip after a fusable producer become its activation_min/max."""
from __future__ import annotations

import numpy as np
import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph
from mcudeploy.passes import FuseActivation
from mcudeploy.passes.fuse_activation import combine_clamps

ACTIVATIONS = {
    "relu": ("Relu", {}, (0.0, None)),
    "clip": ("Clip", {"min": -0.5, "max": 0.75}, (-0.5, 0.75)),
    "relu6": ("Clip", {"min": 0.0, "max": 6.0}, (0.0, 6.0)),
    "clip_max_only": ("Clip", {"max": 0.3}, (None, 0.3)),
}


def _producer(graph: Graph, op: str, x, attrs: dict):
    rng = np.random.default_rng(2)
    if op == "Conv":
        w = graph.add_constant("w", rng.standard_normal((3, 3, 1, 1)).astype(np.float32))
        return graph.add_node("Conv", [x, w], attrs, name="producer")
    if op in ("Add", "Sub", "Mul"):
        other = graph.add_constant("k", rng.standard_normal((3, 1, 1)).astype(np.float32))
        return graph.add_node(op, [x, other], attrs, name="producer")
    if op in ("MaxPool", "AveragePool"):
        return graph.add_node(op, [x], {"kernel_shape": (2, 2), **attrs}, name="producer")
    raise ValueError(op)


def producer_then(op: str, activation: str, existing: dict | None = None) -> Graph:
    graph = Graph("fuse")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 4, 4))
    producer = _producer(graph, op, x, existing or {})
    act_op, act_attrs, _ = ACTIVATIONS[activation]
    act = graph.add_node(act_op, [producer.outputs[0]], act_attrs, name="act", output_names=["y"])
    graph.outputs = [act.outputs[0]]
    return graph


@pytest.mark.parametrize("op", ["Conv", "Add", "Sub", "Mul", "MaxPool", "AveragePool"])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_fuses_into_producer(op, activation):
    graph = producer_then(op, activation)
    before, changed = apply(graph, FuseActivation())
    assert changed == ["fuse_activation"] and op_counts(graph) == {op: 1}
    node = graph.nodes[0]
    assert (node.attrs["activation_min"], node.attrs["activation_max"]) == ACTIVATIONS[activation][2]
    assert graph.outputs[0].name == "y" and graph.outputs[0].producer is node
    assert_same_function(before, graph)


@pytest.mark.parametrize("transpose_b", [0, 1])
def test_fuses_into_gemm(transpose_b):
    graph = Graph("gemm")
    x = graph.add_input("x", DType.FLOAT32, (2, 5))
    w = graph.add_constant("w", np.random.default_rng(3).standard_normal((5, 5)).astype(np.float32))
    gemm = graph.add_node("Gemm", [x, w], {"transB": transpose_b})
    graph.outputs = list(graph.add_node("Clip", [gemm.outputs[0]], {"min": 0.0, "max": 6.0}).outputs)
    before, _ = apply(graph, FuseActivation())
    assert op_counts(graph) == {"Gemm": 1}
    assert_same_function(before, graph)


@pytest.mark.parametrize("existing,activation,expected", [
    ({"activation_min": 0.0}, "relu6", (0.0, 6.0)),
    ({"activation_min": -1.0, "activation_max": 1.0}, "relu", (0.0, 1.0)),
    ({"activation_min": -2.0, "activation_max": -1.0}, "relu", (0.0, 0.0)),  # empty: all zero
    ({"activation_max": 0.2}, "clip", (-0.5, 0.2)),
])
def test_combines_with_existing_clamp(existing, activation, expected):
    graph = producer_then("Conv", activation, existing)
    before, _ = apply(graph, FuseActivation())
    node = graph.nodes[0]
    assert (node.attrs["activation_min"], node.attrs["activation_max"]) == expected
    assert_same_function(before, graph)


def test_combine_clamps_matches_two_clips():
    values = np.linspace(-10, 10, 201)
    for inner in [(None, None), (0.0, None), (-3.0, 2.0), (4.0, 5.0)]:
        for outer in [(0.0, 6.0), (None, 1.0), (-8.0, -7.0)]:
            low, high = combine_clamps(inner, outer)
            twice = np.clip(np.clip(values, *inner), *outer)
            np.testing.assert_array_equal(np.clip(values, low, high), twice)


def test_producer_with_two_users_is_not_fused():
    graph = producer_then("Conv", "relu")
    other = graph.add_node("Sigmoid", [graph.node("producer").outputs[0]], name="other")
    graph.outputs.append(other.outputs[0])
    _, changed = apply(graph, FuseActivation())
    assert changed == [] and op_counts(graph)["Relu"] == 1


def test_producer_output_that_is_a_graph_output_is_not_fused():
    graph = producer_then("Conv", "relu")
    graph.outputs.append(graph.node("producer").outputs[0])
    _, changed = apply(graph, FuseActivation())
    assert changed == [] and op_counts(graph)["Relu"] == 1


def test_non_fusable_producer_is_left_alone():
    graph = Graph("sigmoid_relu")
    x = graph.add_input("x", DType.FLOAT32, (1, 4))
    s = graph.add_node("Sigmoid", [x])
    graph.outputs = list(graph.add_node("Relu", [s.outputs[0]]).outputs)
    _, changed = apply(graph, FuseActivation())
    assert changed == []
