"""AVERAGE_POOL_2D / MAX_POOL_2D -> AveragePool / MaxPool (NHWC, explicit SAME / VALID pads,
padded positions never counted, fused clamp); MEAN -> ReduceMean(axes, keepdims)."""
from __future__ import annotations

from ..common import converter, fused_activation, normalize_axis, spatial_pads, strides_of
from ..context import ConversionContext

POOLS = {"AVERAGE_POOL_2D": "AveragePool", "MAX_POOL_2D": "MaxPool"}


@converter(*POOLS)
def pool_2d(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    if x.rank != 4:
        raise ctx.unsupported(f"input {x.type_str()} must be rank 4 (NHWC)")
    kernel = int(ctx.options.get("filter_height", 1)), int(ctx.options.get("filter_width", 1))
    if min(kernel) <= 0:
        raise ctx.unsupported(f"filter size {list(kernel)} must be positive")
    strides = strides_of(ctx)
    attrs = {"layout": "NHWC", "kernel_shape": kernel, "strides": strides,
             "pads": spatial_pads(ctx, x.shape[1:3], kernel, strides), **fused_activation(ctx)}
    ctx.add_node(POOLS[ctx.operator.op_name], [x], attrs)


@converter("MEAN")
def mean(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    axes = sorted({normalize_axis(ctx, a, x.rank) for a in ctx.constant_ints(1, "axes")})
    keepdims = int(bool(ctx.options.get("keep_dims", False)))
    ctx.add_node("ReduceMean", [x], {"axes": axes, "keepdims": keepdims})
