"""The IR verifier: checks every invariant written in the IR docstrings.

Run between pipeline stages in tests (``driver`` runs it after import and after every
pass pipeline). It collects all problems and raises one :class:`GraphError` listing them,
each naming the node or value.

Checks: op registered; input count within the op's spec; attributes normalised; node
order is topological (acyclic, nothing read before it is produced); no dangling value
(every non-constant input is produced or is a graph input); unique node and value names;
use lists match the inputs; constants match their dtype and shape; shapes static and
positive; quantization scales positive and finite, zero points within the dtype; every
node's outputs match its op's shape inference; graph outputs produced; quantize /
dequantize values carry quantization parameters.
"""
from __future__ import annotations

import functools

import numpy as np

from ..errors import GraphError
from .graph import Graph
from .node import Node
from .registry import get_op
from .value import Value

# Quantization scales outside this range (1e-30 ... 1e30) only come from damaged files; the
# requantization multipliers derived from them (ratios of two or three scales) would not
# fit a 32-bit fixed-point multiplier and shift.
MIN_SCALE, MAX_SCALE = 1e-30, 1e30


def _check_value(value: Value, problems: list[str]) -> None:
    if any(d <= 0 for d in value.shape):
        problems.append(f"value {value.name!r} has a non-positive dimension {list(value.shape)}")
    if value.const is not None:
        if value.const.shape != value.shape or value.const.dtype != value.dtype.numpy:
            problems.append(f"constant {value.name!r} holds {value.const.dtype}{list(value.const.shape)} "
                            f"but is declared {value.type_str()}")
    if value.quant is not None and value.quant.axis is not None:
        axis = value.quant.axis
        if not -value.rank <= axis < value.rank or value.shape[axis] != value.quant.scale.size:
            problems.append(f"value {value.name!r}: per-channel axis {axis} with "
                            f"{value.quant.scale.size} scales does not fit {value.type_str()}")
    if value.quant is not None:
        _check_quant(value, problems)


def _check_quant(value: Value, problems: list[str]) -> None:
    """Scales positive, finite and within [MIN_SCALE, MAX_SCALE]; integer zero points
    within the value's dtype (int8 [-128, 127], ...)."""
    assert value.quant is not None  # the caller checks it
    scale = value.quant.scale.astype(np.float64)
    bad = ~(np.isfinite(scale) & (scale >= MIN_SCALE) & (scale <= MAX_SCALE))
    if bad.any():
        problems.append(f"value {value.name!r}: quantization scale {float(scale[bad][0])!r} is not a "
                        f"positive number in [{MIN_SCALE:g}, {MAX_SCALE:g}]")
    if value.dtype.is_integer:
        low, high = _integer_range(value.dtype.numpy)
        zero_point = value.quant.zero_point
        outside = (zero_point < low) | (zero_point > high)
        if outside.any():
            problems.append(f"value {value.name!r}: zero point {int(zero_point[outside][0])} is "
                            f"outside {value.dtype} [{low}, {high}]")


@functools.lru_cache(maxsize=None)
def _integer_range(dtype) -> tuple[int, int]:
    """``(min, max)`` of an integer numpy dtype (np.iinfo is slow to build, and verify runs
    it for every quantized value)."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _check_node(node: Node, available: set[int], problems: list[str], uses: dict[int, set]) -> None:
    where = f"node {node.name!r} ({node.op})"
    try:
        opdef = get_op(node.op)
    except Exception as err:  # unknown op
        problems.append(f"{where}: {err}")
        return
    present = len(node.inputs)
    inferable = True  # shape inference needs the right number of inputs, all present
    if present < opdef.min_inputs or (opdef.max_inputs is not None and present > opdef.max_inputs):
        problems.append(f"{where}: has {present} inputs, expects {', '.join(opdef.inputs)}")
        inferable = False
    for index, value in enumerate(node.inputs):
        if value is None:
            required = index < len(opdef.inputs) and not opdef.inputs[index].endswith("?")
            if required:
                problems.append(f"{where}: required input {opdef.inputs[index]} is missing")
                inferable = False
            continue
        if (id(node), index) not in uses.get(id(value), ()) and (node, index) not in value.uses:
            problems.append(f"{where}: input {value.name!r} does not list this use")
        if id(value) not in available and value.const is None:
            if value.producer is None:
                problems.append(f"{where}: input {value.name!r} is dangling (no producer, "
                                "not a graph input, not a constant)")
            else:
                problems.append(f"{where}: input {value.name!r} is read before its producer "
                                f"{value.producer.name!r} runs (order is not topological, or a cycle)")
    for value in node.outputs:
        if value.producer is not node:
            problems.append(f"{where}: output {value.name!r} names another producer")
    if not inferable:
        return
    try:
        expected = opdef.infer(node.inputs, node.attrs)
    except ValueError as err:
        problems.append(f"{where}: {err}")
        return
    if len(expected) != len(node.outputs):
        problems.append(f"{where}: has {len(node.outputs)} outputs, its op gives {len(expected)}")
    for value, want in zip(node.outputs, expected):
        if value.shape != want.shape or value.dtype != want.dtype:
            problems.append(f"{where}: output {value.name!r} is {value.type_str()}, shape "
                            f"inference gives {want.dtype}[{','.join(map(str, want.shape))}]")
    if node.op == "QuantizeLinear" and node.outputs and node.outputs[0].quant is None:
        problems.append(f"{where}: output {node.outputs[0].name!r} has no quantization parameters")
    if node.op == "DequantizeLinear" and node.inputs and node.inputs[0] is not None \
            and node.inputs[0].quant is None:
        problems.append(f"{where}: input {node.inputs[0].name!r} has no quantization parameters")


def verify(graph: Graph) -> None:
    """Raise :class:`GraphError` listing every broken invariant of ``graph``; return if none."""
    problems: list[str] = []
    available: set[int] = {id(v) for v in graph.inputs}
    node_names: set[str] = set()
    value_names: dict[str, int] = {}
    uses: dict[int, set] = {}   # value -> its (node, index) uses, as a set: O(1) per check
    for value in graph.values():
        uses[id(value)] = {(id(user), index) for user, index in value.uses}
        if value_names.setdefault(value.name, id(value)) != id(value):
            problems.append(f"two different values are named {value.name!r}")
        _check_value(value, problems)
    for value in graph.inputs:
        if value.producer is not None:
            problems.append(f"graph input {value.name!r} is produced by {value.producer.name!r}")
    for node in graph.nodes:
        if node.name in node_names:
            problems.append(f"two nodes are named {node.name!r}")
        node_names.add(node.name)
        _check_node(node, available, problems, uses)
        available.update(id(v) for v in node.outputs)
    for value in graph.outputs:
        if id(value) not in available and value.const is None:
            problems.append(f"graph output {value.name!r} is not produced by any node")
    if problems:
        shown = "\n  - ".join(problems[:25])
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        raise GraphError(f"graph {graph.name!r} is invalid ({len(problems)} problem(s)):\n  - {shown}{more}")
