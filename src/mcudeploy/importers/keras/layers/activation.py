"""Activation layers -> IR activations.

* ``Activation(name)``: :func:`~..registry.apply_activation` (its own node).
* ``ReLU(max_value, negative_slope, threshold)``: ``Relu``; with ``max_value`` ``Clip(0, m)``;
  with ``negative_slope`` (and no ``max_value``) ``LeakyRelu``; a threshold is not supported.
* ``LeakyReLU``: ``LeakyRelu(alpha)`` (tf.keras 2 ``alpha``, default 0.3; Keras 3
  ``negative_slope``, default 0.3).
* ``PReLU``: ``PRelu(x, alpha)``, the learned ``alpha`` of shape ``input.shape[1:]`` (size 1
  on ``shared_axes``) as a constant ``[1, *alpha.shape]``.
* ``Softmax(axis)``, ``ELU(alpha)``.
"""
from __future__ import annotations

from ....ir import Value
from ..context import LayerContext
from ..registry import activation_name, apply_activation, converter


@converter("Activation")
def activation(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    return [apply_activation(ctx, x, activation_name(ctx), fused=False, own_node=True)]


def _number(ctx: LayerContext, key: str, default: float | None) -> float | None:
    value = ctx.option(key, default)
    if value is None:
        return None
    if isinstance(value, list) and len(value) == 1:   # tf.keras 2 may store [0.3]
        value = value[0]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ctx.unsupported(f"option {key} = {value!r} is not a number") from None


@converter("ReLU")
def relu(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    high = _number(ctx, "max_value", None)
    slope = _number(ctx, "negative_slope", 0.0) or 0.0
    if _number(ctx, "threshold", 0.0):
        raise ctx.unsupported("a ReLU threshold is not supported; use threshold 0")
    if slope and high is not None:
        raise ctx.unsupported("a ReLU with both negative_slope and max_value is not supported")
    if slope:
        return [ctx.add("LeakyRelu", [x], {"alpha": slope})]
    if high is None:
        return [ctx.add("Relu", [x])]
    return [ctx.add("Clip", [x], {"min": 0.0, "max": high})]


@converter("LeakyReLU")
def leaky_relu(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    key = "negative_slope" if "negative_slope" in ctx.layer.config else "alpha"
    return [ctx.add("LeakyRelu", [x], {"alpha": _number(ctx, key, 0.3)})]


@converter("PReLU")
def prelu(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    (alpha,) = ctx.weights(1)
    slope = ctx.constant(alpha.reshape((1,) + alpha.shape), "alpha")
    return [ctx.add("PRelu", [x, slope])]


@converter("Softmax")
def softmax(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    axis = ctx.option("axis", -1)
    if isinstance(axis, list):
        if len(axis) != 1:
            raise ctx.unsupported(f"softmax over several axes {axis} is not supported")
        axis = axis[0]
    return [ctx.add("Softmax", [x], {"axis": int(axis)})]


@converter("ELU")
def elu(ctx: LayerContext) -> list[Value]:
    return [ctx.add("Elu", [ctx.single_input()], {"alpha": _number(ctx, "alpha", 1.0)})]
