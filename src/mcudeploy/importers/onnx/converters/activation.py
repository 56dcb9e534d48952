"""Activations: Relu, Sigmoid, Tanh, HardSwish, HardSigmoid, LeakyRelu, PRelu, Clip, Softmax.

* Clip bounds are constant inputs (opset-6 attribute bounds arrive as inputs, because
  models older than opset 11 are upgraded first); a missing or infinite bound is
  unbounded (``None`` in the IR).
* Softmax (also LogSoftmax / Hardmax, converted in ``math_ops``) before opset 13 works on
  the input coerced to 2-D at ``axis`` (default 1):
  ``Y = reshape(softmax(flatten(X, axis), axis=-1), X.shape)``; from 13 on it is over
  ``axis`` alone (default -1), which is the IR's semantics.
"""
from __future__ import annotations

import math

import onnx

from ..context import ConversionContext
from .registry import converter

_DIRECT = {"Relu": (), "Sigmoid": (), "Tanh": (), "HardSwish": (),
           "HardSigmoid": ("alpha", "beta"), "LeakyRelu": ("alpha",)}


@converter(*_DIRECT)
def convert_unary(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    kept = {key: attrs[key] for key in _DIRECT[node.op_type] if key in attrs}
    ctx.emit(node.op_type, [ctx.input(node, 0)], kept, node)


@converter("PRelu")
def convert_prelu(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("PRelu", [ctx.input(node, 0), ctx.input(node, 1)], None, node)


def _bound(value) -> float | None:
    if value is None:
        return None
    number = float(value.reshape(-1)[0]) if hasattr(value, "reshape") else float(value)
    return None if math.isinf(number) else number


@converter("Clip")
def convert_clip(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    low = ctx.constant_input(node, 1, "min")
    high = ctx.constant_input(node, 2, "max")
    ctx.emit("Clip", [ctx.input(node, 0)], {"min": _bound(low), "max": _bound(high)}, node)


@converter("Softmax")
def convert_softmax(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    emit_softmax_like(ctx, node, "Softmax")


def emit_softmax_like(ctx: ConversionContext, node: onnx.NodeProto, op: str) -> None:
    """Softmax / LogSoftmax / Hardmax: one IR ``op`` over ``axis`` (opset >= 13 or the last
    axis), else over the input flattened to 2-D at ``axis`` and reshaped back."""
    x = ctx.required_input(node, 0)
    attrs = ctx.attributes(node)
    axis = attrs.get("axis", 1 if ctx.opset < 13 else -1)
    if not -x.rank <= axis < max(x.rank, 1):
        raise ctx.unsupported(node, f"axis {axis} is out of range for {x.type_str()}")
    axis = axis % x.rank if x.rank else 0
    if ctx.opset >= 13 or axis == x.rank - 1:
        ctx.emit(op, [x], {"axis": axis - x.rank if x.rank else -1}, node)
        return
    # opset < 13: softmax over all axes from `axis` on, as one flattened row
    output = node.output[0]
    flat = ctx.emit("Flatten", [x], {"axis": axis}, node, name=ctx.helper_name(node, "to_2d"),
                    outputs=[f"{output}/2d"]).outputs[0]
    soft = ctx.emit(op, [flat], {"axis": -1}, node,
                    outputs=[f"{output}/{op.lower()}_2d"]).outputs[0]
    ctx.emit("Reshape", [soft], {"shape": x.shape}, node,
             name=ctx.helper_name(node, "restore_shape"), outputs=[output])
