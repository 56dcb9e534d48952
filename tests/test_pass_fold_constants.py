"""FoldConstants: all-constant nodes evaluated once; DequantizeLinear of weights kept."""
from __future__ import annotations

import numpy as np

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.passes import FoldConstants

RNG = np.random.default_rng(4)


def _const(graph: Graph, name: str, shape) -> object:
    return graph.add_constant(name, RNG.standard_normal(shape).astype(np.float32))


def test_constant_chain_folds_and_keeps_the_rest():
    graph = Graph("chain")
    x = graph.add_input("x", DType.FLOAT32, (2, 3))
    a = graph.add_node("Mul", [_const(graph, "a", (2, 3)), _const(graph, "b", (3,))], name="mul")
    t = graph.add_node("Transpose", [_const(graph, "c", (3, 2))], {"perm": (1, 0)}, name="t")
    s = graph.add_node("Add", [a.outputs[0], t.outputs[0]], name="sum")
    y = graph.add_node("Add", [x, s.outputs[0]], name="use", output_names=["y"])
    graph.outputs = [y.outputs[0]]
    before, changed = apply(graph, FoldConstants())
    assert changed == ["fold_constants"] and op_counts(graph) == {"Add": 1}
    folded = graph.nodes[0].inputs[1]
    assert folded.is_constant and folded.name == "sum"
    expected = (before.node("mul").inputs[0].const * before.node("mul").inputs[1].const
                + before.node("t").inputs[0].const.T)
    np.testing.assert_allclose(folded.const, expected, rtol=1e-6)
    assert_same_function(before, graph)


def test_folded_graph_output_keeps_its_name():
    graph = Graph("const_out")
    x = graph.add_input("x", DType.FLOAT32, (3,))
    relu = graph.add_node("Relu", [_const(graph, "c", (3,))], output_names=["constant_out"])
    graph.outputs = [graph.add_node("Relu", [x], output_names=["y"]).outputs[0], relu.outputs[0]]
    before, _ = apply(graph, FoldConstants())
    assert [v.name for v in graph.outputs] == ["y", "constant_out"]
    assert graph.outputs[1].is_constant
    assert_same_function(before, graph)


def test_quantize_of_float_weights_folds_but_dequantize_stays():
    graph = Graph("qdq_weights")
    x = graph.add_input("x", DType.FLOAT32, (1, 2, 4, 4))
    quant = QuantParams(np.array([0.02, 0.05], np.float32), np.zeros(2, np.int64), axis=0)
    q = graph.add_node("QuantizeLinear", [_const(graph, "w", (2, 2, 1, 1))], name="q")
    q.outputs[0].quant = quant
    dq = graph.add_node("DequantizeLinear", [q.outputs[0]], name="dq")
    graph.outputs = list(graph.add_node("Conv", [x, dq.outputs[0]]).outputs)
    before, _ = apply(graph, FoldConstants())
    assert op_counts(graph) == {"DequantizeLinear": 1, "Conv": 1}
    weights = graph.node("dq").inputs[0]
    assert weights.is_constant and weights.dtype == DType.INT8 and weights.quant == quant
    assert_same_function(before, graph)


def test_large_results_are_not_folded():
    graph = Graph("large")
    x = graph.add_input("x", DType.FLOAT32, (1, 1, 64, 64))
    up = graph.add_node("Resize", [_const(graph, "c", (1, 1, 2, 2))], {"sizes": (1, 1, 64, 64)})
    graph.outputs = list(graph.add_node("Add", [x, up.outputs[0]]).outputs)
    _, changed = apply(graph, FoldConstants(max_elements=1000))
    assert changed == [] and op_counts(graph)["Resize"] == 1
    _, changed = apply(graph, FoldConstants())
    assert changed == ["fold_constants"] and op_counts(graph) == {"Add": 1}
