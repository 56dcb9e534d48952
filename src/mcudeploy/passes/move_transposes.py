"""Move Transposes through layout-agnostic ops so that inverse pairs meet and cancel.

Two rewrites (the op table and attribute remapping are in :mod:`.relayout`):

* **sink** ``X(Transpose_P(a), ...) -> Transpose_P(X'(a, ...))`` when *every* non-constant
  input of ``X`` is a ``Transpose`` with the same ``perm P`` (constants are re-laid out by
  ``inverse(P)``) or a graph input (which gets a ``Transpose_inverse(P)`` right after it,
  the place a layout change of the input belongs). Transposes only move towards the
  outputs, so repeated sinking ends.
* **hoist** ``Transpose_Q(X(u, consts)) -> X'(Transpose_Q(u), consts')`` when ``X`` has a
  single non-constant input, the Transpose is its only reader, and following ``X``'s input
  upwards through such ops reaches a graph input, a constant or another Transpose (where
  the moved Transpose folds, composes or merges). It brings the input Transposes of NHWC
  ops to the graph inputs (``input -> Pad -> Conv``) and onto constant weights
  (``DequantizeLinear(int8 W)`` becomes ``DequantizeLinear(int8 W transposed)``).

Sinking and hoisting are not run in the same loop (one undoes the other); :mod:`.to_nhwc`
sinks to a fixpoint first, then hoists.
"""
from __future__ import annotations

from ..ir import Graph, Node, Value, get_op
from .permutation import Perm, inverse, permute_constant, permute_quant, permute_shape
from .relayout import relayout_attrs
from .rewrite import drop_node, new_value, remove_if_dead, replace_constant, sole_user


def _relayout_constants(graph: Graph, node: Node, perm: Perm, rank: int) -> bool:
    """Re-lay out ``node``'s constant inputs for inputs transposed by ``perm``; ``False`` if
    one has a higher rank than the tensors (cannot follow the permutation)."""
    for index, value in enumerate(node.inputs):
        if value is None or value.const is None:
            continue
        if value.rank > rank:
            return False
        array = permute_constant(value.const, perm)
        if array is not value.const:
            quant = permute_quant(value.quant, perm) if value.rank == rank else value.quant
            replace_constant(graph, node, index, array, suffix="t", quant=quant)
    return True


def _sink_inputs(graph: Graph, node: Node) -> tuple[Perm, list[Node], list[int]] | None:
    """``(P, transposes, graph_input_indices)`` when every non-constant input of ``node`` is
    a Transpose by ``P`` or a graph input. With graph inputs among them, at least one
    Transpose must read a node output: Transposes that sit right after graph inputs on both
    sides would otherwise sink back and forth."""
    perm, transposes, graph_inputs = None, [], []
    for index, value in enumerate(node.inputs):
        if value is None or value.is_constant:
            continue
        producer = value.producer
        if producer is None and any(value is v for v in graph.inputs):
            graph_inputs.append(index)
            continue
        if producer is None or producer.op != "Transpose":
            return None
        if perm is not None and producer.attrs["perm"] != perm:
            return None
        perm = producer.attrs["perm"]
        transposes.append(producer)
    if perm is None or (graph_inputs and all(t.inputs[0].producer is None for t in transposes)):
        return None
    if any(node.inputs[i].rank != len(perm) for i in graph_inputs):
        return None
    return perm, transposes, graph_inputs


def _transpose_after_input(graph: Graph, value: Value, perm: Perm) -> Value:
    """``Transpose(value, perm)`` placed first in the graph (it reads a graph input)."""
    out = new_value(graph, f"{value.name}_t", value, permute_shape(value.shape, perm),
                    quant=permute_quant(value.quant, perm))
    first = graph.nodes[0] if graph.nodes else None
    graph.add_node("Transpose", [value], {"perm": perm}, name=f"{value.name}_transpose",
                   outputs=[out], before=first)
    return out


def sink(graph: Graph, node: Node) -> bool:
    """Sink the input Transposes of ``node`` below it (see the module docstring)."""
    found = _sink_inputs(graph, node)
    if found is None:
        return False
    perm, transposes, graph_inputs = found
    rank, new_perm = len(perm), inverse(perm)
    attrs = relayout_attrs(node.op, node.attrs, new_perm)
    if attrs is None or any(v.rank != rank for v in node.outputs):
        return False
    if any(v.is_constant and v.rank > rank for v in node.inputs if v is not None):
        return False
    _relayout_constants(graph, node, new_perm, rank)
    for index, value in enumerate(node.inputs):
        if index in graph_inputs:
            node.set_input(index, _transpose_after_input(graph, value, new_perm))
        elif value is not None and not value.is_constant:
            assert value.producer is not None  # a Transpose (the caller checks every input)
            node.set_input(index, value.producer.inputs[0])
    node.attrs = get_op(node.op).normalize_attrs(attrs, node.name)
    layout = transposes[0].inputs[0].layout
    for index, old in reversed(list(enumerate(node.outputs))):
        moved = new_value(graph, f"{old.name}_t", old, permute_shape(old.shape, new_perm),
                          quant=permute_quant(old.quant, new_perm), layout=layout)
        node.replace_output(index, moved)
        graph.add_node("Transpose", [moved], {"perm": perm}, name=f"{node.name}_transpose",
                       outputs=[old], after=node)
    for transpose in transposes:
        remove_if_dead(graph, transpose)
    return True


def _single_tensor_input(node: Node) -> int | None:
    tensors = [i for i, v in enumerate(node.inputs) if v is not None and not v.is_constant]
    return tensors[0] if len(tensors) == 1 else None


def _reaches_anchor(graph: Graph, value: Value, depth: int = 16) -> bool:
    """True if ``value`` is a graph input, a constant, a Transpose output, or comes from
    one through single-input agnostic ops (the upward path hoisting would follow)."""
    if value.is_constant or value.producer is None:
        return True
    producer = value.producer
    if producer.op == "Transpose":
        return True
    agnostic = relayout_attrs(producer.op, producer.attrs, tuple(range(value.rank))) is not None
    index = _single_tensor_input(producer) if agnostic else None
    if depth == 0 or index is None or len(producer.outputs) != 1:
        return False
    return _reaches_anchor(graph, producer.inputs[index], depth - 1)


def hoist(graph: Graph, transpose: Node) -> bool:
    """Move ``transpose`` above the op producing its input (see the module docstring)."""
    node, perm = transpose.inputs[0].producer, transpose.attrs["perm"]
    if node is None or len(node.outputs) != 1 or sole_user(graph, node.outputs[0]) is not transpose:
        return False
    attrs = relayout_attrs(node.op, node.attrs, perm)
    index = _single_tensor_input(node) if attrs is not None else None
    if index is None and not (attrs is not None and all(
            v is None or v.is_constant for v in node.inputs)):
        return False
    if index is not None and (node.inputs[index].rank != len(perm)
                              or not _reaches_anchor(graph, node.inputs[index])):
        return False
    if not _relayout_constants(graph, node, perm, len(perm)):
        return False
    if index is not None:
        source = node.inputs[index]
        moved = new_value(graph, f"{source.name}_t", source, permute_shape(source.shape, perm),
                          quant=permute_quant(source.quant, perm), layout=transpose.outputs[0].layout)
        graph.add_node("Transpose", [source], {"perm": perm}, name=f"{node.name}_transpose",
                       outputs=[moved], before=node)
        node.set_input(index, moved)
    assert attrs is not None  # refused above when the op cannot follow the permutation
    node.attrs = get_op(node.op).normalize_attrs(attrs, node.name)
    out = transpose.outputs[0]
    drop_node(graph, transpose)
    node.replace_output(0, out)
    return True


def sink_all(graph: Graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if node.outputs and node.op != "Transpose":
            changed |= sink(graph, node)
    return changed


def hoist_all(graph: Graph) -> bool:
    changed = False
    for node in reversed(list(graph.nodes)):
        if node.outputs and node.op == "Transpose":
            changed |= hoist(graph, node)
    return changed
