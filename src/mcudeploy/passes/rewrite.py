"""Graph-editing helpers shared by the passes.

Input: a :class:`~mcudeploy.ir.Graph` and the nodes / values a pass wants to change.
Output: the graph edited in place, its invariants kept (use lists, topological order,
unique names) and, above all, **graph output names kept stable**: when a node that
produces a graph output goes away, the node that takes over produces the *same* value
object, so the model's output names never change.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, QuantParams, Value, get_op


def is_graph_output(graph: Graph, value: Value) -> bool:
    return any(v is value for v in graph.outputs)


def sole_user(graph: Graph, value: Value) -> Node | None:
    """The one node reading ``value`` once, or ``None`` when it has other readers or is a
    graph output (then rewriting its producer would change what someone else sees)."""
    if len(value.uses) != 1 or is_graph_output(graph, value):
        return None
    return value.uses[0][0]


def drop_node(graph: Graph, node: Node) -> None:
    """Remove ``node`` without checking its outputs (the caller re-homed them)."""
    graph.nodes.remove(node)
    node.detach()


def remove_if_dead(graph: Graph, node: Node | None) -> bool:
    """Remove ``node`` when none of its outputs is read or is a graph output."""
    if node is None or node not in graph.nodes:
        return False
    if any(v.uses or is_graph_output(graph, v) for v in node.outputs):
        return False
    drop_node(graph, node)
    return True


def forward(graph: Graph, node: Node, source: Value) -> bool:
    """Remove single-output ``node`` whose output equals ``source`` (same type, same data);
    readers of the output read ``source`` instead.

    When the output is a graph output, ``source``'s producer takes the output value over
    (so the graph output keeps its name); if ``source`` is a graph input, a constant or
    already a graph output that is impossible and the node stays (returns ``False``).
    """
    old = node.outputs[0]
    if not is_graph_output(graph, old):
        drop_node(graph, node)
        graph.replace_all_uses(old, source)
        return True
    producer = source.producer
    if producer is None or is_graph_output(graph, source):
        return False
    drop_node(graph, node)
    graph.replace_all_uses(source, old)
    producer.replace_output(producer.outputs.index(source), old)
    old.layout = old.layout or source.layout
    return True


def absorb_into_producer(graph: Graph, producer: Node, node: Node) -> None:
    """Remove single-input-path ``node`` (reading ``producer``'s output, its only use) and
    make ``producer`` produce ``node``'s output value instead: the caller has already changed
    ``producer`` so that its result equals ``node``'s (folded BN, fused activation)."""
    middle = node.inputs[0]
    out = node.outputs[0]
    drop_node(graph, node)
    producer.replace_output(producer.outputs.index(middle), out)
    out.layout = out.layout or middle.layout


def new_value(graph: Graph, base: str, like: Value, shape: tuple[int, ...], *,
              quant: QuantParams | None = None, layout: str | None = None) -> Value:
    """A fresh (unattached) value named after ``base`` with ``like``'s dtype, standing for the
    same model tensor as ``like`` (its ``display_name``)."""
    return Value(graph.unique_name(base), like.dtype, shape, quant=quant, layout=layout,
                 origin=like.display_name)


def replace_constant(graph: Graph, node: Node, index: int, array: np.ndarray, *,
                     suffix: str, quant: QuantParams | None = None) -> Value:
    """Give ``node`` a new constant as input ``index`` (the old array is never mutated)."""
    old = node.input(index)
    base = f"{old.name}_{suffix}" if old is not None else f"{node.name}_{suffix}"
    value = graph.add_constant(base, np.ascontiguousarray(array), quant=quant)
    node.set_input(index, value)
    return value


def clamp_of(node: Node) -> tuple[float | None, float | None]:
    """A node's fused clamp ``(activation_min, activation_max)``; ``(None, None)`` if none."""
    return node.attrs.get("activation_min"), node.attrs.get("activation_max")


def has_fused_activation(node: Node) -> bool:
    return clamp_of(node) != (None, None)


def replace_op(node: Node, op: str, inputs: list[Value | None], attrs: dict) -> Node:
    """Turn ``node`` into an ``op`` node in place (same name, same output values); extra
    old inputs are dropped."""
    node.op = op
    node.attrs = get_op(op).normalize_attrs(attrs, node_name=node.name)
    for index in range(max(len(node.inputs), len(inputs))):
        node.set_input(index, inputs[index] if index < len(inputs) else None)
    return node
