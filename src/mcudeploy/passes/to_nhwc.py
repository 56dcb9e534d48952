"""Convert NCHW image ops to NHWC, the layout of the MCU kernels (CMSIS-NN, TFLite Micro).

Input: a graph with ``layout=NCHW`` Conv, ConvTranspose, MaxPool, AveragePool,
GlobalAveragePool, BatchNormalization (rank 4) or DepthToSpace nodes, typically an
imported ONNX CNN. Output: the same function where

1. each such node runs in NHWC between ``Transpose(0,2,3,1)`` and ``Transpose(0,3,1,2)``
   (the node keeps its name; its output value keeps name and readers, now produced by
   the trailing Transpose). Constant weights get new NHWC arrays:

   * Conv ``[O, C/g, kH, kW] -> [O, kH, kW, C/g]`` (``W.transpose(0, 2, 3, 1)``);
   * ConvTranspose ``[C, O/g, kH, kW] -> [O, kH, kW, C/g]``: viewed as
     ``[g, C/g, O/g, kH, kW]``, transposed to ``[g, O/g, kH, kW, C/g]``, reshaped.

   Non-constant weights (``DequantizeLinear(int8 W)``) get a Transpose node, hoisted onto
   the int8 constant later; a grouped ConvTranspose with non-constant weights stays NCHW.
2. Transposes are sunk through layout-agnostic ops and cancelled
   (:mod:`.move_transposes`, :mod:`.cancel_transposes`) until nothing changes, then
   the remaining input-side Transposes are hoisted towards the graph inputs.
3. With ``change_io=True`` each rank-4 graph input whose readers are all
   ``Transpose(0,2,3,1)`` becomes an NHWC input (shape permuted, ``layout="NHWC"``), and
   each rank-4 graph output produced by ``Transpose(0,3,1,2)`` becomes NHWC; names stay.
   (A Reshape that only moves size-1 axes counts as such a Transpose.)

``Value.layout`` is set to ``"NHWC"`` on the tensors the converted ops read and write.
For a CNN whose only layout-blocking ops are at the ends, no Transpose remains inside:
at most one after each rank-4 graph input and one before each rank-4 graph output.
"""
from __future__ import annotations

import logging

import numpy as np

from ..ir import Graph, Node, Value
from .cancel_transposes import simplify_once
from .move_transposes import hoist_all, sink_all
from .permutation import NCHW_TO_NHWC, NHWC_TO_NCHW, Perm, keeps_memory_order, permute_quant, permute_shape
from .rewrite import drop_node, is_graph_output, new_value, replace_constant

log = logging.getLogger(__name__)

LAYOUT_OPS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
                        "BatchNormalization", "DepthToSpace"})
CONV_WEIGHTS_TO_NHWC: Perm = (0, 2, 3, 1)
CONV_TRANSPOSE_WEIGHTS_TO_NHWC: Perm = (1, 2, 3, 0)  # exact for group == 1 only


def conv_transpose_weights_to_nhwc(weights: np.ndarray, group: int) -> np.ndarray:
    """ConvTranspose weights ``[C, O/g, kH, kW]`` (NCHW) -> ``[O, kH, kW, C/g]`` (NHWC)."""
    channels, out_per_group, kh, kw = weights.shape
    grouped = weights.reshape(group, channels // group, out_per_group, kh, kw)
    return np.ascontiguousarray(grouped.transpose(0, 2, 3, 4, 1)).reshape(
        group * out_per_group, kh, kw, channels // group)


def _convertible(node: Node) -> bool:
    if node.op not in LAYOUT_OPS or node.attrs.get("layout") != "NCHW" or node.inputs[0].rank != 4:
        return False
    if node.op == "ConvTranspose" and node.attrs["group"] != 1:
        return node.inputs[1].is_constant
    return True


def _transpose_value(graph: Graph, value: Value, perm: Perm, *, before: Node, suffix: str,
                     layout: str | None) -> Value:
    """A new Transpose of ``value`` inserted before ``before``; returns its output."""
    out = new_value(graph, f"{value.name}_{suffix}", value, permute_shape(value.shape, perm),
                    quant=permute_quant(value.quant, perm), layout=layout)
    graph.add_node("Transpose", [value], {"perm": perm}, name=f"{before.name}_{suffix}_transpose",
                   outputs=[out], before=before)
    return out


def _convert_weights(graph: Graph, node: Node) -> None:
    weights = node.inputs[1]
    if node.op == "ConvTranspose":
        if weights.const is not None:
            array = conv_transpose_weights_to_nhwc(weights.const, node.attrs["group"])
            replace_constant(graph, node, 1, array, suffix="nhwc",
                             quant=permute_quant(weights.quant, CONV_TRANSPOSE_WEIGHTS_TO_NHWC))
            return
        perm = CONV_TRANSPOSE_WEIGHTS_TO_NHWC
    else:
        perm = CONV_WEIGHTS_TO_NHWC
    if weights.const is not None:
        replace_constant(graph, node, 1, weights.const.transpose(perm), suffix="nhwc",
                         quant=permute_quant(weights.quant, perm))
    else:
        node.set_input(1, _transpose_value(graph, weights, perm, before=node, suffix="ohwi",
                                           layout=None))


def convert_node(graph: Graph, node: Node) -> None:
    """Step 1 of the module docstring for one node."""
    x = node.inputs[0]
    x.layout = x.layout or "NCHW"
    node.set_input(0, _transpose_value(graph, x, NCHW_TO_NHWC, before=node, suffix="nhwc",
                                       layout="NHWC"))
    if node.op in ("Conv", "ConvTranspose"):
        _convert_weights(graph, node)
    node.attrs["layout"] = "NHWC"
    old = node.outputs[0]
    moved = new_value(graph, f"{old.name}_nhwc", old, permute_shape(old.shape, NCHW_TO_NHWC),
                      quant=permute_quant(old.quant, NCHW_TO_NHWC), layout="NHWC")
    node.replace_output(0, moved)
    old.layout = old.layout or "NCHW"
    graph.add_node("Transpose", [moved], {"perm": NHWC_TO_NCHW}, name=f"{node.name}_to_nchw",
                   outputs=[old], after=node)


def _fixpoint(graph: Graph, step) -> bool:
    changed = False
    while step(graph) | simplify_once(graph):
        changed = True
    return changed


def _is_layout_change(node: Node, perm: Perm) -> bool:
    """``node`` transposes a rank-4 tensor by ``perm``: a Transpose, or a Reshape standing for
    one (cancel_transposes turns a Transpose that moves only size-1 axes into a Reshape)."""
    if node.op == "Transpose":
        return node.attrs["perm"] == perm
    source = node.inputs[0]
    return (node.op == "Reshape" and source.rank == 4 and keeps_memory_order(source.shape, perm)
            and node.outputs[0].shape == permute_shape(source.shape, perm))


def _inputs_to_nhwc(graph: Graph) -> bool:
    changed = False
    for value in graph.inputs:
        users = [node for node, _ in value.uses]
        if (value.rank != 4 or not users or is_graph_output(graph, value)
                or any(not _is_layout_change(n, NCHW_TO_NHWC)
                       or is_graph_output(graph, n.outputs[0]) for n in users)):
            continue
        value.shape = permute_shape(value.shape, NCHW_TO_NHWC)
        value.quant = permute_quant(value.quant, NCHW_TO_NHWC)
        value.layout = "NHWC"
        for node in users:
            transposed = node.outputs[0]
            drop_node(graph, node)
            graph.replace_all_uses(transposed, value)
        changed = True
    return changed


def _outputs_to_nhwc(graph: Graph) -> bool:
    changed = False
    for value in list(graph.outputs):
        node = value.producer
        if value.rank != 4 or node is None or not _is_layout_change(node, NHWC_TO_NCHW):
            continue
        source = node.inputs[0]
        if source.producer is None or is_graph_output(graph, source) or value.uses:
            continue
        drop_node(graph, node)
        value.shape, value.layout = source.shape, "NHWC"
        value.quant = source.quant
        graph.replace_all_uses(source, value)
        source.producer.replace_output(source.producer.outputs.index(source), value)
        changed = True
    return changed


class ToNHWC:
    name = "to_nhwc"
    requires = "a verified graph"
    ensures = ("no NCHW Conv / ConvTranspose / pool / BN / DepthToSpace remains (except a grouped "
               "ConvTranspose with non-constant weights); Transposes only where a layout-blocking op "
               "or a graph input / output needs them (none at the graph ends with change_io)")

    def __init__(self, change_io: bool = False) -> None:
        self.change_io = change_io

    def run(self, graph: Graph) -> bool:
        targets = [node for node in graph.nodes if _convertible(node)]
        for node in targets:
            convert_node(graph, node)
        changed = bool(targets)
        changed |= _fixpoint(graph, sink_all)
        changed |= _fixpoint(graph, hoist_all)
        if self.change_io:
            changed |= _inputs_to_nhwc(graph) | _outputs_to_nhwc(graph)
        log.debug("to_nhwc: converted %d nodes, %d Transposes left", len(targets),
                  sum(n.op == "Transpose" for n in graph.nodes))
        return changed
