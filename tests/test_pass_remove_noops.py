"""RemoveNoOps: nodes that return their input unchanged go; graph output names stay."""
from __future__ import annotations

import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph
from mcudeploy.passes import RemoveNoOps

SHAPE = (1, 3, 4, 5)

NOOPS = {
    "identity": ("Identity", {}),
    "dropout": ("Dropout", {"ratio": 0.3}),
    "reshape_same": ("Reshape", {"shape": SHAPE}),
    "transpose_identity": ("Transpose", {"perm": (0, 1, 2, 3)}),
    "slice_all": ("Slice", {"starts": (0, -100), "ends": (100, 100), "axes": (1, 3), "steps": (1, 1)}),
    "pad_zero": ("Pad", {"pads": (0,) * 8}),
    "split_one": ("Split", {"axis": 1, "split": (3,)}),
    "clip_unbounded": ("Clip", {}),
}
NOT_NOOPS = {
    "reshape_other": ("Reshape", {"shape": (1, 3, 20)}),
    "transpose_swap": ("Transpose", {"perm": (0, 1, 3, 2)}),
    "slice_reversed": ("Slice", {"starts": (-1,), "ends": (-100,), "axes": (1,), "steps": (-1,)}),
    "pad_some": ("Pad", {"pads": (0, 0, 1, 0, 0, 0, 0, 0)}),
    "clip_bounded": ("Clip", {"min": 0.0}),
}


def sandwich(op: str, attrs: dict, *, output: bool = False) -> Graph:
    """x -> Relu -> <op> -> Sigmoid -> y (or <op> itself producing the graph output)."""
    graph = Graph("noop")
    x = graph.add_input("x", DType.FLOAT32, SHAPE)
    relu = graph.add_node("Relu", [x], name="relu")
    middle = graph.add_node(op, [relu.outputs[0]], attrs, name="candidate",
                            outputs=1 if op == "Split" else None, output_names=["m"])
    if output:
        graph.outputs = [middle.outputs[0]]
    else:
        graph.outputs = list(graph.add_node("Sigmoid", [middle.outputs[0]], output_names=["y"]).outputs)
    return graph


@pytest.mark.parametrize("kind", sorted(NOOPS))
@pytest.mark.parametrize("as_output", [False, True])
def test_noop_removed(kind, as_output):
    op, attrs = NOOPS[kind]
    graph = sandwich(op, attrs, output=as_output)
    before, changed = apply(graph, RemoveNoOps())
    assert changed == ["remove_noops"]
    assert op_counts(graph) == ({"Relu": 1} if as_output else {"Relu": 1, "Sigmoid": 1})
    assert [v.name for v in graph.outputs] == [v.name for v in before.outputs]
    assert_same_function(before, graph)


@pytest.mark.parametrize("kind", sorted(NOT_NOOPS))
def test_real_op_kept(kind):
    op, attrs = NOT_NOOPS[kind]
    graph = sandwich(op, attrs)
    _, changed = apply(graph, RemoveNoOps())
    assert changed == [] and graph.node("candidate").op == op


def test_noop_on_graph_input_feeding_graph_output_stays():
    graph = Graph("passthrough")
    x = graph.add_input("x", DType.FLOAT32, SHAPE)
    graph.outputs = list(graph.add_node("Identity", [x], output_names=["y"]).outputs)
    _, changed = apply(graph, RemoveNoOps())
    assert changed == [] and [v.name for v in graph.outputs] == ["y"]
