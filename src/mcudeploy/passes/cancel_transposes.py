"""Simplify Transpose (and the Reshape chains they turn into).

Input: any graph. Output: the same function with, repeated until nothing changes:

1. ``Transpose(perm=identity)`` removed;
2. ``Transpose(constant)`` folded into a new constant (per-channel axis remapped);
3. ``Transpose(Q) . Transpose(P)`` composed into one ``Transpose(compose(P, Q))`` (and
   so removed in rule 1 when they are inverse);
4. sibling Transposes of the same value with the same perm merged into one;
5. a Transpose that only moves size-1 axes (``keeps_memory_order``) becomes a Reshape;
6. a reshape-like op (Reshape, Flatten, Squeeze, Unsqueeze) reading another reshape-like
   op reads that op's input instead, as a single ``Reshape`` to its own output shape.

Graph output names are kept (see :func:`~mcudeploy.passes.rewrite.forward`).
"""
from __future__ import annotations

import logging

from ..ir import Graph, Node, Value, get_op
from .permutation import compose, is_identity, keeps_memory_order, permute_quant
from .rewrite import drop_node, forward, remove_if_dead

log = logging.getLogger(__name__)

RESHAPE_LIKE = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})


def make_reshape(node: Node) -> None:
    """Turn reshape-like (or order-keeping Transpose) ``node`` into ``Reshape`` to its output shape."""
    node.op = "Reshape"
    node.attrs = get_op("Reshape").normalize_attrs({"shape": node.outputs[0].shape}, node.name)


def _fold_constant(graph: Graph, node: Node) -> bool:
    source, old = node.inputs[0], node.outputs[0]
    perm = node.attrs["perm"]
    assert source.const is not None  # the caller folds only constant sources
    array = source.const.transpose(perm).copy() if source.rank else source.const
    constant = Value(old.name, old.dtype, old.shape, const=array,
                     quant=old.quant or permute_quant(source.quant, perm), layout=old.layout)
    drop_node(graph, node)
    graph.replace_all_uses(old, constant)
    return True


def _compose(graph: Graph, node: Node) -> bool:
    inner = node.inputs[0].producer
    assert inner is not None  # the caller composes only Transpose after Transpose
    node.attrs = {"perm": compose(inner.attrs["perm"], node.attrs["perm"])}
    node.set_input(0, inner.inputs[0])
    remove_if_dead(graph, inner)
    return True


def _merge_sibling(graph: Graph, node: Node) -> bool:
    source = node.inputs[0]
    for user, _ in source.uses:
        if (user is not node and user.op == "Transpose" and user.attrs == node.attrs
                and graph.nodes.index(user) < graph.nodes.index(node)):
            return forward(graph, node, user.outputs[0])
    return False


def _transpose_rule(graph: Graph, node: Node) -> bool:
    source = node.inputs[0]
    perm = node.attrs["perm"]
    if is_identity(perm):
        return forward(graph, node, source)
    if source.is_constant:
        return _fold_constant(graph, node)
    if source.producer is not None and source.producer.op == "Transpose":
        return _compose(graph, node)
    if _merge_sibling(graph, node):
        return True
    if keeps_memory_order(source.shape, perm):
        make_reshape(node)
        return True
    return False


def _reshape_rule(graph: Graph, node: Node) -> bool:
    inner = node.inputs[0].producer
    if inner is None or inner.op not in RESHAPE_LIKE:
        return False
    node.set_input(0, inner.inputs[0])
    make_reshape(node)
    remove_if_dead(graph, inner)
    if node.outputs[0].shape == node.inputs[0].shape:
        forward(graph, node, node.inputs[0])
    return True


def simplify_once(graph: Graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        if not node.outputs:  # detached: removed by an earlier rewrite in this sweep
            continue
        if node.op == "Transpose":
            changed |= _transpose_rule(graph, node)
        elif node.op in RESHAPE_LIKE:
            changed |= _reshape_rule(graph, node)
    return changed


class CancelTransposes:
    name = "cancel_transposes"
    requires = "a verified graph"
    ensures = ("no identity, constant, back-to-back, duplicate or memory-order-keeping Transpose "
               "remains, and no reshape-like op reads another")

    def run(self, graph: Graph) -> bool:
        changed = False
        while simplify_once(graph):
            changed = True
        return changed
