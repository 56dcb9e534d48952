"""Pooling and reductions: MaxPool, AveragePool, GlobalAveragePool, ReduceMean.

MaxPool's optional second output (argmax indices) has no IR equivalent and is refused
when something reads it. ReduceMean takes ``axes`` as an attribute (opset < 18) or a
constant input (opset >= 18); empty axes mean all axes, or a no-op with
``noop_with_empty_axes=1``.
"""
from __future__ import annotations

import onnx

from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW, emit_spatial, lift_input, resolve_window, spatial_rank


def _pool(ctx: ConversionContext, node: onnx.NodeProto, op: str) -> None:
    attrs = ctx.attributes(node)
    x = ctx.required_input(node, 0)
    rank = spatial_rank(ctx, node, x)
    if "kernel_shape" not in attrs:
        raise ctx.unsupported(node, "the kernel_shape attribute is missing")
    window = resolve_window(ctx, node, attrs, x.shape[2:], attrs["kernel_shape"]).lifted()
    ir_attrs = {"kernel_shape": window.kernel, "strides": window.strides,
                "dilations": window.dilations, "pads": window.pads,
                "ceil_mode": attrs.get("ceil_mode", 0), "layout": NCHW}
    if op == "AveragePool":
        ir_attrs["count_include_pad"] = attrs.get("count_include_pad", 0)
    emit_spatial(ctx, node, op, [lift_input(ctx, node, 0, rank)], ir_attrs, rank)


@converter("MaxPool")
def convert_max_pool(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    if ctx.output_used(node, 1):
        raise ctx.unsupported(node, f"its Indices output {node.output[1]!r} is used; argmax "
                              "indices are not supported (export the model without them)")
    _pool(ctx, node, "MaxPool")


@converter("AveragePool")
def convert_average_pool(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    _pool(ctx, node, "AveragePool")


@converter("GlobalAveragePool")
def convert_global_average_pool(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    rank = spatial_rank(ctx, node, ctx.required_input(node, 0))
    emit_spatial(ctx, node, "GlobalAveragePool", [lift_input(ctx, node, 0, rank)],
                 {"layout": NCHW}, rank)


@converter("ReduceMean")
def convert_reduce_mean(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    x = ctx.required_input(node, 0)
    if ctx.opset >= 18:
        axes_input = ctx.constant_input(node, 1, "axes")
        axes = [] if axes_input is None else [int(a) for a in axes_input.reshape(-1)]
    else:
        axes = list(attrs.get("axes", []))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            ctx.emit("Identity", [x], None, node)
            return
        axes = list(range(x.rank))
    if any(not -x.rank <= a < x.rank for a in axes):
        raise ctx.unsupported(node, f"axes {axes} are out of range for {x.type_str()}")
    axes = sorted({a % x.rank for a in axes})
    ctx.emit("ReduceMean", [x], {"axes": axes, "keepdims": attrs.get("keepdims", 1)}, node)
