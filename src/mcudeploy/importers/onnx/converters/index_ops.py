"""Indexing and repetition: Gather, GatherElements, GatherND, ScatterElements (and the
deprecated Scatter), ScatterND, OneHot, Trilu, Tile, Expand, SpaceToDepth, EyeLike, and
Range / ConstantOfShape (folded at import time when their inputs are constants, which is
the only form an MCU graph can hold).

Shape-giving inputs (Tile's repeats, Expand's shape, OneHot's depth, Trilu's k) must be
constants; they become attributes. EyeLike's output depends only on its input's static
shape, so it becomes a constant.
"""
from __future__ import annotations

import numpy as np
import onnx

from ..context import ConversionContext
from .math_ops import onnx_dtype
from .registry import converter
from .spatial import NCHW


def _ints(ctx: ConversionContext, node: onnx.NodeProto, index: int, what: str) -> list[int] | None:
    array = ctx.constant_input(node, index, what)
    return None if array is None else [int(v) for v in array.reshape(-1)]


def _required_ints(ctx: ConversionContext, node: onnx.NodeProto, index: int, what: str) -> list[int]:
    return [int(v) for v in ctx.required_constant_input(node, index, what).reshape(-1)]


def _axis(ctx: ConversionContext, node: onnx.NodeProto, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.invalid(node, f"axis {axis} is out of range for rank {rank}")
    return axis % rank


@converter("Gather", "GatherElements")
def convert_gather(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x, indices = ctx.required_input(node, 0), ctx.input(node, 1)
    axis = _axis(ctx, node, ctx.attributes(node).get("axis", 0), x.rank)
    ctx.emit(node.op_type, [x, indices], {"axis": axis}, node)


@converter("GatherND")
def convert_gather_nd(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    batch_dims = ctx.attributes(node).get("batch_dims", 0)
    ctx.emit("GatherND", [ctx.input(node, 0), ctx.input(node, 1)], {"batch_dims": batch_dims}, node)


@converter("ScatterElements", "Scatter")
def convert_scatter_elements(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    attrs = ctx.attributes(node)
    ir_attrs = {"axis": _axis(ctx, node, attrs.get("axis", 0), x.rank),
                "reduction": attrs.get("reduction", "none")}
    ctx.emit("ScatterElements", [x, ctx.input(node, 1), ctx.input(node, 2)], ir_attrs, node)


@converter("ScatterND")
def convert_scatter_nd(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    reduction = ctx.attributes(node).get("reduction", "none")
    ctx.emit("ScatterND", [ctx.input(node, i) for i in range(3)], {"reduction": reduction}, node)


@converter("OneHot")
def convert_one_hot(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    (depth,) = _required_ints(ctx, node, 1, "depth")
    axis = ctx.attributes(node).get("axis", -1)
    ctx.emit("OneHot", [ctx.input(node, 0), ctx.input(node, 2)], {"depth": depth, "axis": axis}, node)


@converter("Trilu")
def convert_trilu(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    k = _ints(ctx, node, 1, "k")
    ir_attrs = {"upper": ctx.attributes(node).get("upper", 1), "k": k[0] if k else 0}
    ctx.emit("Trilu", [ctx.input(node, 0)], ir_attrs, node)


@converter("Tile")
def convert_tile(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("Tile", [ctx.input(node, 0)], {"repeats": _required_ints(ctx, node, 1, "repeats")}, node)


@converter("Expand")
def convert_expand(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("Expand", [ctx.input(node, 0)], {"shape": _required_ints(ctx, node, 1, "shape")}, node)


@converter("SpaceToDepth")
def convert_space_to_depth(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = {"blocksize": ctx.attributes(node)["blocksize"], "layout": NCHW}
    ctx.emit("SpaceToDepth", [ctx.input(node, 0)], attrs, node).outputs[0].layout = NCHW


@converter("EyeLike")
def convert_eye_like(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    shape = ctx.shape_of(node.input[0])
    if len(shape) != 2:
        raise ctx.invalid(node, f"input of shape {list(shape)} is not 2-D")
    attrs = ctx.attributes(node)
    source = ctx.constant(node.input[0])
    dtype = onnx_dtype(ctx, node, attrs["dtype"]).numpy if "dtype" in attrs else \
        (source.dtype if source is not None
         else ctx.values[node.input[0]].dtype.numpy)
    ctx.constants[node.output[0]] = np.eye(*shape, k=attrs.get("k", 0), dtype=dtype)


@converter("Range", "ConstantOfShape")
def convert_static_only(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    """Reached only when an input is computed at run time (constant inputs are folded)."""
    computed = [name for name in node.input if name and ctx.constant(name) is None]
    raise ctx.unsupported(node, f"its input(s) {', '.join(map(repr, computed))} are computed at "
                          "run time, so its output shape is dynamic; mcudeploy needs them to be "
                          "constants (export the model with fixed sizes)")
