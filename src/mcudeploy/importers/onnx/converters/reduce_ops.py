"""Reductions: ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1, ReduceL2,
ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ArgMax, ArgMin, TopK, CumSum, and
GlobalMaxPool (= ReduceMax over the spatial axes, kept).

``axes`` is an attribute before opset 18 (ReduceSum: 13) and a constant input from then
on; empty axes mean every axis, or an Identity with ``noop_with_empty_axes=1``. TopK's
``k`` and CumSum's ``axis`` are constant inputs.
"""
from __future__ import annotations

import onnx

from ..context import ConversionContext
from .math_ops import output_names
from .registry import converter

REDUCTIONS = {"ReduceMax": 18, "ReduceMin": 18, "ReduceSum": 13, "ReduceProd": 18,
              "ReduceL1": 18, "ReduceL2": 18, "ReduceSumSquare": 18, "ReduceLogSum": 18,
              "ReduceLogSumExp": 18}


def _constant_ints(ctx: ConversionContext, node: onnx.NodeProto, index: int, what: str):
    array = ctx.constant_input(node, index, what)
    return None if array is None else [int(v) for v in array.reshape(-1)]


def reduce_axes(ctx: ConversionContext, node: onnx.NodeProto, rank: int, since: int) -> list[int] | None:
    """The sorted non-negative axes of a Reduce* node; ``None`` for a no-op."""
    attrs = ctx.attributes(node)
    axes = _constant_ints(ctx, node, 1, "axes") if ctx.opset >= since else attrs.get("axes")
    axes = list(axes or [])
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(rank))
    if any(not -rank <= a < max(rank, 1) for a in axes):
        raise ctx.invalid(node, f"axes {axes} are out of range for rank {rank}")
    return sorted({a % rank for a in axes}) if rank else []


@converter(*REDUCTIONS)
def convert_reduce(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    axes = reduce_axes(ctx, node, x.rank, REDUCTIONS[node.op_type])
    if axes is None:
        ctx.emit("Identity", [x], None, node)
        return
    keepdims = ctx.attributes(node).get("keepdims", 1)
    ctx.emit(node.op_type, [x], {"axes": axes, "keepdims": keepdims}, node)


@converter("GlobalMaxPool")
def convert_global_max_pool(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    if x.rank < 3:
        raise ctx.invalid(node, f"input {x.type_str()} has no spatial axes")
    ctx.emit("ReduceMax", [x], {"axes": list(range(2, x.rank)), "keepdims": 1}, node)


@converter("ArgMax", "ArgMin")
def convert_arg(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    kept = {key: attrs[key] for key in ("axis", "keepdims", "select_last_index") if key in attrs}
    x = ctx.required_input(node, 0)
    kept["axis"] = _axis(ctx, node, kept.get("axis", 0), x.rank)
    ctx.emit(node.op_type, [x], kept, node)


def _axis(ctx: ConversionContext, node: onnx.NodeProto, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.invalid(node, f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


@converter("TopK")
def convert_top_k(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    (k,) = _constant_ints(ctx, node, 1, "K")
    attrs = ctx.attributes(node)
    ir_attrs = {"k": k, "axis": _axis(ctx, node, attrs.get("axis", -1), x.rank),
                "largest": attrs.get("largest", 1), "sorted": attrs.get("sorted", 1)}
    if not ir_attrs["sorted"]:
        ir_attrs["sorted"] = 1  # unsorted order is unspecified; sorted is one valid answer
    ctx.emit("TopK", [x], ir_attrs, node, outputs=output_names(ctx, node, 2))


@converter("CumSum")
def convert_cum_sum(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    (axis,) = _constant_ints(ctx, node, 1, "axis")
    attrs = ctx.attributes(node)
    ctx.emit("CumSum", [x], {"axis": _axis(ctx, node, axis, x.rank),
                             "exclusive": attrs.get("exclusive", 0),
                             "reverse": attrs.get("reverse", 0)}, node)
