"""The constant arrays the generated C holds: one listing, read by the code generator (which
names and writes them, :mod:`mcudeploy.codegen.emit_project`) and by the memory ledger (which
counts them, :mod:`mcudeploy.plan.ledger`), so that the ledger's weights are the compiled arrays.

Input: the graph, the kernel selection, the prepared integer parameters of every node and the
plan's region of every constant. Per node, besides the graph's constants it reads:

* its variant's layouts (``prepare_constants``, :class:`~.variant.KernelVariant`): a constant
  only this node reads, or one every reader lays out into the same bytes (a tiled layer's tiles:
  :func:`layout_readers`), is emitted in that layout instead (same symbol and region; rows padded,
  depthwise channel groups); one that other nodes read too, or an input the node lacks (a bias
  with the input offset folded in), is a new array in the region of the node's weights;
* the call's own arrays (:func:`call_arrays`): the per-channel requantization multipliers and
  shifts of :data:`REQUANTIZED_OPS` (int32, one each per output channel) and Gather's
  non-int32 constant indices copied to int32.

``network_data.c`` aligns each array to :data:`ALIGNMENT` bytes and stores an array equal to an
earlier one of the same region once (:func:`same_bytes_key`: the per-tile copies of a tiled
layer's arrays), so a region holds

    bytes(region) = sum over its distinct arrays of align_up(nbytes, ALIGNMENT)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import Graph, Node

if TYPE_CHECKING:
    from .choose import KernelSelection

ALIGNMENT = 16          # each array's alignment in network_data.c
# the ops whose C call takes an mcu_channel_quant / mcu_fc_quant (codegen's channel_quant)
REQUANTIZED_OPS = ("Conv", "ConvTranspose", "Gemm", "RequantizeAccumulator")


@dataclass(frozen=True)
class EmittedArray:
    """One constant array of ``network_data.c`` (before identical arrays are merged)."""
    key: str              # the graph constant's name, or "<node> <what>" for the arrays it adds
    values: np.ndarray
    region: str
    kind: str             # "graph" (as the graph holds it), "layout" (a variant's), "call" (requantization, indices)


def call_arrays(node: Node, params: Any) -> dict[str, np.ndarray]:
    """The arrays ``node``'s C call adds, by symbol suffix (module docstring)."""
    if node.op in REQUANTIZED_OPS:
        return {"multiplier": _int32(params.output_multiplier), "shift": _int32(params.output_shift)}
    if node.op == "Gather" and node.inputs[1].const is not None and str(node.inputs[1].dtype) != "int32":
        return {"indices": _int32(node.inputs[1].const)}
    return {}


def _int32(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int32).reshape(-1))


def weights_region(node: Node, weights: dict[str, str]) -> str:
    """The region of ``node``'s first constant operand after the data input (where the arrays
    it adds go), else the first weight region by name."""
    for value in node.inputs[1:]:
        if value is not None and value.name in weights:
            return weights[value.name]
    return next(iter(sorted(set(weights.values()))), "FLASH")


def readers(graph: Graph) -> dict[str, int]:
    """How many node inputs read each constant."""
    counts: dict[str, int] = {}
    for node in graph.nodes:
        for value in node.inputs:
            if value is not None and value.const is not None:
                counts[value.name] = counts.get(value.name, 0) + 1
    return counts


def layout_readers(graph: Graph, kernels: KernelSelection, params: dict[str, Any]) -> dict[str, int]:
    """:func:`readers`, except that a constant every reader re-lays out into the same bytes
    counts as read once: it is emitted in that layout only (the tiles of a tiled layer all read
    one weight tensor through the same variant; its graph form was emitted beside the layout,
    read by nobody: 1.9 MB of a U-Net 512's flash)."""
    counts = readers(graph)
    layouts: dict[str, list] = {}
    for node in graph.nodes:
        variant = kernels.variant(node)
        prepared = (variant.prepare_constants(node, params[node.name])
                    if variant.prepare_constants is not None and node.name in params else {})
        for index, value in enumerate(node.inputs):
            if value is not None and value.const is not None:
                layouts.setdefault(value.name, []).append(prepared.get(index))
    for name, entries in layouts.items():
        if counts.get(name, 0) > 1 and all(entry is not None for entry in entries):
            first = same_bytes_key(entries[0], "")
            if all(same_bytes_key(entry, "") == first for entry in entries[1:]):
                counts[name] = 1
    return counts


def variant_layouts(node: Node, kernels: KernelSelection, params: Any,
                    counts: dict[str, int]) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
    """(graph constant -> values emitted instead, input index -> values of a new array) of
    ``node``'s variant (module docstring)."""
    variant = kernels.variant(node)
    replaced: dict[str, np.ndarray] = {}
    added: dict[int, np.ndarray] = {}
    if variant.prepare_constants is None:
        return replaced, added
    for index, values in sorted(variant.prepare_constants(node, params).items()):
        value = node.inputs[index] if index < len(node.inputs) else None
        if value is not None and value.const is not None and counts[value.name] == 1:
            replaced[value.name] = values
        else:
            added[index] = values
    return replaced, added


def same_bytes_key(values: np.ndarray, region: str) -> tuple[str, str, bytes]:
    """Arrays with one key are stored once in network_data.c."""
    flat = np.ascontiguousarray(values.reshape(-1))
    return region, flat.dtype.str, flat.tobytes()


def emitted_arrays(graph: Graph, kernels: KernelSelection, params: dict[str, Any],
                   weights: dict[str, str]) -> list[EmittedArray]:
    """Every array of ``network_data.c`` in emission order (graph constants, then the arrays
    the variants and the calls add), before identical arrays are merged."""
    counts = layout_readers(graph, kernels, params)
    graph_arrays: dict[str, EmittedArray] = {}
    added: list[EmittedArray] = []
    for node in graph.nodes:
        for value in node.inputs:
            if value is not None and value.const is not None and value.name not in graph_arrays:
                graph_arrays[value.name] = EmittedArray(value.name, np.asarray(value.const), weights[value.name], "graph")
    for node in graph.nodes:
        region = weights_region(node, weights)
        replaced, new = variant_layouts(node, kernels, params[node.name], counts) if node.name in params else ({}, {})
        for name, values in replaced.items():
            graph_arrays[name] = EmittedArray(name, values, graph_arrays[name].region, "layout")
        added += [EmittedArray(f"{node.name} input {index}", values, region, "layout") for index, values in new.items()]
        if node.name in params:
            added += [EmittedArray(f"{node.name} {suffix}", values, region, "call")
                      for suffix, values in call_arrays(node, params[node.name]).items()]
    return [*graph_arrays.values(), *added]


def padded(size: int) -> int:
    """Bytes an array of ``size`` bytes takes in network_data.c (an empty one holds one element)."""
    return -(-max(size, 1) // ALIGNMENT) * ALIGNMENT


def stored_sizes(graph: Graph, kernels: KernelSelection, params: dict[str, Any]) -> dict[str, int]:
    """Graph constant -> the bytes it takes in network_data.c with the arrays its readers add
    in its region (a node's arrays go with its first constant operand after the data input:
    :func:`weights_region`); what :mod:`mcudeploy.plan.placement` places. Identical arrays are
    not merged here (an upper bound for a tiled layer's copies)."""
    weights = {value.name: value.name for value in graph.constants()}     # each constant its own "region"
    sizes: dict[str, int] = {}
    for array in emitted_arrays(graph, kernels, params, weights):
        sizes[array.region] = sizes.get(array.region, 0) + padded(int(array.values.nbytes))
    return sizes


def region_bytes(arrays: list[EmittedArray]) -> dict[str, dict[str, int]]:
    """region -> {"bytes": stored bytes (module docstring), "graph" / "layout" / "call": the
    unpadded bytes of each kind, "alignment": the padding}, identical arrays counted once."""
    seen: set[tuple[str, str, bytes]] = set()
    totals: dict[str, dict[str, int]] = {}
    for array in arrays:
        key = same_bytes_key(array.values, array.region)
        if key in seen:
            continue
        seen.add(key)
        size = int(array.values.nbytes)
        total = totals.setdefault(array.region, {"bytes": 0, "graph": 0, "layout": 0, "call": 0, "alignment": 0})
        total["bytes"] += padded(size)
        total[array.kind] += size
        total["alignment"] += padded(size) - size
    return totals
