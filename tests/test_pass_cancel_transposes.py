"""CancelTransposes: inverse pairs cancel, chains compose, constants fold, duplicates merge."""
from __future__ import annotations

import numpy as np
import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.passes import CancelTransposes
from mcudeploy.passes.permutation import compose, inverse, keeps_memory_order


def chain(shape, perms, *, tail: str | None = "Relu") -> Graph:
    """x -> Transpose(perm) for each perm -> tail (or the last Transpose is the output)."""
    graph = Graph("chain")
    value = graph.add_input("x", DType.FLOAT32, shape)
    for index, perm in enumerate(perms):
        value = graph.add_node("Transpose", [value], {"perm": perm}, name=f"t{index}").outputs[0]
    if tail:
        value = graph.add_node(tail, [value], name="tail").outputs[0]
    graph.outputs = [value]
    return graph


@pytest.mark.parametrize("as_output", [False, True])
def test_inverse_pair_cancels(as_output):
    graph = Graph("pair")
    value = graph.add_node("Relu", [graph.add_input("x", DType.FLOAT32, (1, 3, 4, 5))]).outputs[0]
    for perm in [(0, 2, 3, 1), (0, 3, 1, 2)]:
        value = graph.add_node("Transpose", [value], {"perm": perm}, output_names=["y"]).outputs[0]
    if not as_output:
        value = graph.add_node("Sigmoid", [value], output_names=["z"]).outputs[0]
    graph.outputs = [value]
    before, changed = apply(graph, CancelTransposes())
    assert changed == ["cancel_transposes"] and "Transpose" not in op_counts(graph)
    assert [v.name for v in graph.outputs] == [v.name for v in before.outputs]
    assert_same_function(before, graph)


def test_two_transposes_compose_into_one():
    perms = [(0, 2, 3, 1), (1, 0, 3, 2)]
    graph = chain((2, 3, 4, 5), perms)
    before, _ = apply(graph, CancelTransposes())
    assert op_counts(graph) == {"Transpose": 1, "Relu": 1}
    assert graph.nodes[0].attrs["perm"] == compose(*perms)
    assert_same_function(before, graph)


def test_composition_rule():
    x = np.arange(120).reshape(2, 3, 4, 5)
    first, second = (0, 2, 3, 1), (3, 1, 0, 2)
    np.testing.assert_array_equal(x.transpose(first).transpose(second),
                                  x.transpose(compose(first, second)))
    assert compose(first, inverse(first)) == (0, 1, 2, 3)


def test_transpose_of_quantized_constant_folds_with_its_axis():
    graph = Graph("const")
    x = graph.add_input("x", DType.FLOAT32, (2, 1, 1, 3))
    quant = QuantParams(np.array([0.1, 0.2, 0.3], np.float32), np.zeros(3, np.int64), axis=0)
    w = graph.add_constant("w", np.arange(6, dtype=np.int8).reshape(3, 1, 1, 2), quant=quant)
    t = graph.add_node("Transpose", [w], {"perm": (3, 1, 2, 0)}, name="t")
    t.outputs[0].quant = QuantParams(quant.scale, quant.zero_point, axis=3)
    dq = graph.add_node("DequantizeLinear", [t.outputs[0]])
    graph.outputs = list(graph.add_node("Add", [x, dq.outputs[0]]).outputs)
    before, _ = apply(graph, CancelTransposes())
    assert "Transpose" not in op_counts(graph)
    folded = graph.nodes[0].inputs[0]
    assert folded.is_constant and folded.quant.axis == 3 and folded.shape == (2, 1, 1, 3)
    assert_same_function(before, graph)


def test_sibling_transposes_merge():
    graph = Graph("siblings")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 4, 5))
    a = graph.add_node("Transpose", [x], {"perm": (0, 2, 3, 1)}).outputs[0]
    b = graph.add_node("Transpose", [x], {"perm": (0, 2, 3, 1)}).outputs[0]
    graph.outputs = list(graph.add_node("Add", [a, b], output_names=["y"]).outputs)
    before, _ = apply(graph, CancelTransposes())
    assert op_counts(graph) == {"Transpose": 1, "Add": 1}
    assert_same_function(before, graph)


def test_order_keeping_transpose_becomes_reshape_and_reshapes_merge():
    graph = chain((2, 1, 1, 8), [(0, 3, 1, 2)], tail="Flatten")
    before, _ = apply(graph, CancelTransposes())
    assert op_counts(graph) == {"Reshape": 1} and graph.nodes[0].attrs["shape"] == (2, 8)
    assert keeps_memory_order((2, 1, 1, 8), (0, 3, 1, 2))
    assert not keeps_memory_order((2, 3, 1, 8), (0, 3, 1, 2))
    assert_same_function(before, graph)


def test_reshape_chain_back_to_the_input_shape_disappears():
    graph = Graph("reshapes")
    x = graph.add_input("x", DType.FLOAT32, (2, 6))
    r = graph.add_node("Reshape", [x], {"shape": (2, 3, 2)}).outputs[0]
    u = graph.add_node("Reshape", [r], {"shape": (2, 6)}).outputs[0]
    graph.outputs = list(graph.add_node("Relu", [u]).outputs)
    before, _ = apply(graph, CancelTransposes())
    assert op_counts(graph) == {"Relu": 1}
    assert_same_function(before, graph)


def test_real_transpose_is_kept():
    graph = chain((1, 3, 4, 5), [(0, 2, 3, 1)])
    _, changed = apply(graph, CancelTransposes())
    assert changed == [] and op_counts(graph) == {"Transpose": 1, "Relu": 1}
