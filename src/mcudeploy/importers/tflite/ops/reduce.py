"""Reductions: REDUCE_MAX, REDUCE_MIN, SUM, REDUCE_PROD (axes constant, ``keep_dims``) and
ARG_MAX / ARG_MIN (axis constant, output type int32 or int64, the axis dropped)."""
from __future__ import annotations

from ..common import converter, normalize_axis
from ..context import ConversionContext

REDUCTIONS = {"REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin", "SUM": "ReduceSum",
              "REDUCE_PROD": "ReduceProd"}
ARGS = {"ARG_MAX": "ArgMax", "ARG_MIN": "ArgMin"}


@converter(*REDUCTIONS)
def reduce(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    axes = sorted({normalize_axis(ctx, a, x.rank) for a in ctx.constant_ints(1, "axes")})
    keepdims = int(bool(ctx.options.get("keep_dims", False)))
    if not axes:
        ctx.add_node("Identity", [x])
        return
    ctx.add_node(REDUCTIONS[ctx.operator.op_name], [x], {"axes": axes, "keepdims": keepdims})


@converter(*ARGS)
def arg(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    (axis,) = ctx.constant_ints(1, "axis")
    output_dtype = ctx.output_dtype().value
    if output_dtype not in ("int32", "int64"):
        raise ctx.unsupported(f"output type {output_dtype} is not int32 or int64")
    ctx.add_node(ARGS[ctx.operator.op_name], [x], {"axis": normalize_axis(ctx, axis, x.rank),
                                                  "keepdims": 0, "output_dtype": output_dtype})
