"""The operation layers Keras 3 writes for ``keras.ops`` calls and Python arithmetic on
Keras tensors (module ``keras.src.ops.*``; ``x * 2`` is ``Multiply``, ``x[:, 1:3]`` is
``GetItem``): Keras 3's counterpart of tf.keras's TFOpLambda. They reuse the TF-op
converters of :mod:`.tf_ops`; positional arguments are the call's ``args`` (a constant
stays a number), parameters such as ``axis`` / ``keepdims`` / ``newshape`` / ``axes`` are in
the operation's config.
"""
from __future__ import annotations

from typing import Any

from ....ir import Value
from ..context import LayerContext
from ..registry import operation
from .tf_ops import TF_FUNCTIONS, slice_value

BINARY = {"Add": "add", "Subtract": "subtract", "Multiply": "multiply", "Divide": "truediv",
          "TrueDivide": "truediv", "Maximum": "maximum", "Minimum": "minimum", "Power": "pow"}
UNARY = {"Negative": "negative", "Exp": "exp", "Sqrt": "sqrt", "Absolute": "abs", "Abs": "abs",
         "Square": "square", "Relu": "nn.relu", "Relu6": "nn.relu6", "Sigmoid": "sigmoid",
         "Tanh": "tanh", "Silu": "nn.silu", "Swish": "nn.silu", "Softplus": "softplus"}
REDUCTIONS = {"Mean": "reduce_mean", "Sum": "reduce_sum", "Max": "reduce_max", "Min": "reduce_min"}


def _argument(ctx: LayerContext, position: int) -> Any:
    if position >= len(ctx.args):
        raise ctx.unsupported(f"expects {position + 1} positional arguments, the call passes {len(ctx.args)}")
    return ctx.args[position]


@operation(*BINARY)
def binary(ctx: LayerContext) -> list[Value]:
    handler = TF_FUNCTIONS[BINARY[ctx.layer.class_name]]
    return [handler(ctx, _argument(ctx, 0), {"y": _argument(ctx, 1)})]


@operation(*UNARY)
def unary(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS[UNARY[ctx.layer.class_name]](ctx, _argument(ctx, 0), {})]


@operation(*REDUCTIONS)
def reduction(ctx: LayerContext) -> list[Value]:
    handler = TF_FUNCTIONS[REDUCTIONS[ctx.layer.class_name]]
    return [handler(ctx, _argument(ctx, 0), {"axis": ctx.option("axis"), "keepdims": ctx.option("keepdims", False)})]


@operation("Softmax")
def softmax(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS["nn.softmax"](ctx, _argument(ctx, 0), {"axis": ctx.option("axis", -1)})]


@operation("LeakyRelu")
def leaky_relu(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS["nn.leaky_relu"](ctx, _argument(ctx, 0), {"alpha": ctx.option("negative_slope", 0.2)})]


@operation("Concatenate")
def concatenate(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS["concat"](ctx, _argument(ctx, 0), {"axis": ctx.option("axis", 0)})]


@operation("Reshape")
def reshape(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS["reshape"](ctx, _argument(ctx, 0), {"shape": ctx.option("newshape")})]


@operation("Transpose")
def transpose(ctx: LayerContext) -> list[Value]:
    return [TF_FUNCTIONS["transpose"](ctx, _argument(ctx, 0), {"perm": ctx.option("axes")})]


def _index(item: Any) -> Any:
    """Keras 3's serialized index item -> the ``{start, stop, step}`` / int / ellipsis form."""
    if isinstance(item, dict) and item.get("class_name") == "__slice__":
        return dict(item.get("config") or {})
    if item is Ellipsis or item == "..." or (isinstance(item, dict) and item.get("class_name") == "__ellipsis__"):
        return {"class_name": "__ellipsis__"}
    return item


@operation("GetItem")
def get_item(ctx: LayerContext) -> list[Value]:
    x, key = _argument(ctx, 0), _argument(ctx, 1)
    if not isinstance(x, Value):
        raise ctx.unsupported("the sliced argument is not a tensor")
    items = [_index(i) for i in (key if isinstance(key, list) else [key])]
    return [slice_value(ctx, x, items)]
