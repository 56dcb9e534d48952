"""The layers tf.keras 2.x writes for TensorFlow functions called on Keras tensors:
``TFOpLambda`` (``tf.math.*``, ``tf.nn.*``, ``tf.compat.v1.*``, Python arithmetic such as
``x * 2``) and ``SlicingOpLambda`` (``x[:, a:b]``).

A TFOpLambda's config names the function (``math.multiply``); the call's first argument
is the first positional one (a tensor, a list of tensors, or a constant written as
``["_CONSTANT_VALUE", -1, value]``), the others are keyword arguments under TensorFlow's
parameter names (``y``, ``axis``, ``shape``, ...). The ``compat.v1.`` and ``math.``
prefixes are dropped before the function is looked up in :data:`TF_FUNCTIONS`.

Slicing: each item of ``slice_spec`` is ``{start, stop, step}`` (a Python slice, step > 0),
an integer (the axis is sliced to one element, then squeezed) or an ellipsis (full
slices for the axes it stands for) -> one IR Slice (then a Squeeze for integer items).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ....ir import Value
from ..context import LayerContext
from ..registry import converter

TfFunction = Callable[[LayerContext, Any, dict[str, Any]], Value]
TF_FUNCTIONS: dict[str, TfFunction] = {}

BINARY = {"add": "Add", "__operators__.add": "Add", "subtract": "Sub", "__operators__.sub": "Sub",
          "multiply": "Mul", "__operators__.mul": "Mul", "truediv": "Div", "divide": "Div",
          "__operators__.truediv": "Div", "maximum": "Max", "minimum": "Min",
          "squared_difference": "SquaredDifference", "pow": "Pow"}
UNARY = {"nn.relu": "Relu", "sigmoid": "Sigmoid", "nn.sigmoid": "Sigmoid", "tanh": "Tanh",
         "nn.tanh": "Tanh", "exp": "Exp", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "abs": "Abs",
         "nn.elu": "Elu", "softplus": "Softplus", "nn.softplus": "Softplus"}
REDUCTIONS = {"reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "reduce_max": "ReduceMax",
              "reduce_min": "ReduceMin"}


def tf_function(*names: str) -> Callable[[TfFunction], TfFunction]:
    def register(function: TfFunction) -> TfFunction:
        for name in names:
            TF_FUNCTIONS[name] = function
        return function
    return register


def _operand(ctx: LayerContext, item: Any, what: str) -> Value:
    if isinstance(item, Value):
        return item
    if item is None or isinstance(item, (str, dict)):
        raise ctx.unsupported(f"argument {what} is missing or not a tensor / number ({str(item)[:60]})")
    try:
        array = np.asarray(item, dtype=np.float32)
    except (TypeError, ValueError):
        raise ctx.unsupported(f"argument {what} = {str(item)[:60]} is neither a tensor nor a number") from None
    return ctx.constant(array, what)


def _tensor(ctx: LayerContext, item: Any, what: str) -> Value:
    if not isinstance(item, Value):
        raise ctx.unsupported(f"argument {what} must be a tensor")
    return item


def _axis(ctx: LayerContext, axis: Any, rank: int) -> int:
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise ctx.unsupported(f"axis {axis!r} is out of range for a rank-{rank} tensor")
    return axis % rank


for _name, _op in BINARY.items():
    def _binary(ctx: LayerContext, first: Any, kwargs: dict[str, Any], _op: str = _op) -> Value:
        a, b = _operand(ctx, first, "x"), _operand(ctx, kwargs.get("y"), "y")
        return ctx.add(_op, [a, b])
    tf_function(_name)(_binary)

for _name, _op in UNARY.items():
    def _unary(ctx: LayerContext, first: Any, kwargs: dict[str, Any], _op: str = _op) -> Value:
        return ctx.add(_op, [_tensor(ctx, first, "x")])
    tf_function(_name)(_unary)


@tf_function("nn.relu6")
def _relu6(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    return ctx.add("Clip", [_tensor(ctx, first, "features")], {"min": 0.0, "max": 6.0})


@tf_function("nn.leaky_relu")
def _leaky_relu(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    return ctx.add("LeakyRelu", [_tensor(ctx, first, "features")], {"alpha": float(kwargs.get("alpha", 0.2))})


@tf_function("nn.silu", "nn.swish")
def _silu(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "features")
    if float(kwargs.get("beta", 1.0)) != 1.0:
        raise ctx.unsupported("silu with beta != 1 is not supported")
    return ctx.add("Mul", [x, ctx.add("Sigmoid", [x], suffix="sigmoid")])


@tf_function("nn.softmax")
def _softmax(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "logits")
    axis = kwargs.get("axis")
    return ctx.add("Softmax", [x], {"axis": -1 if axis is None else _axis(ctx, axis, x.rank)})


@tf_function("negative")
def _negative(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    return ctx.add("Mul", [_tensor(ctx, first, "x"), ctx.constant(np.array(-1.0, np.float32), "minus_one")])


@tf_function("square")
def _square(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "x")
    return ctx.add("Mul", [x, x])


@tf_function("clip_by_value")
def _clip(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    low, high = kwargs.get("clip_value_min"), kwargs.get("clip_value_max")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        raise ctx.unsupported("clip_by_value needs number bounds")
    return ctx.add("Clip", [_tensor(ctx, first, "t")], {"min": float(low), "max": float(high)})


for _name, _op in REDUCTIONS.items():
    def _reduce(ctx: LayerContext, first: Any, kwargs: dict[str, Any], _op: str = _op) -> Value:
        x = _tensor(ctx, first, "input_tensor")
        axis = kwargs.get("axis")
        axes = list(range(x.rank)) if axis is None else axis if isinstance(axis, list) else [axis]
        attrs = {"axes": sorted({_axis(ctx, a, x.rank) for a in axes}),
                 "keepdims": int(bool(kwargs.get("keepdims", False)))}
        return ctx.add(_op, [x], attrs)
    tf_function(_name)(_reduce)


@tf_function("concat")
def _concat(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    values = [_operand(ctx, v, f"values_{i}") for i, v in enumerate(first if isinstance(first, list) else [first])]
    return ctx.add("Concat", values, {"axis": _axis(ctx, kwargs.get("axis"), values[0].rank)})


@tf_function("reshape")
def _reshape(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "tensor")
    shape = kwargs.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape) \
            or sum(d == -1 for d in shape) > 1 or any(d == 0 or d < -1 for d in shape):
        raise ctx.unsupported(f"reshape to {shape!r}: the shape must be constant integers with at most one -1")
    known = int(np.prod([d for d in shape if d != -1]))
    if known <= 0 or x.size % known:
        raise ctx.unsupported(f"cannot reshape {x.type_str()} to {shape}")
    return ctx.add("Reshape", [x], {"shape": tuple(x.size // known if d == -1 else d for d in shape)})


@tf_function("transpose")
def _transpose(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "a")
    perm = kwargs.get("perm")
    perm = list(range(x.rank))[::-1] if perm is None else perm
    return ctx.add("Transpose", [x], {"perm": tuple(perm)})


@tf_function("expand_dims")
def _expand_dims(ctx: LayerContext, first: Any, kwargs: dict[str, Any]) -> Value:
    x = _tensor(ctx, first, "input")
    return ctx.add("Unsqueeze", [x], {"axes": (_axis(ctx, kwargs.get("axis"), x.rank + 1),)})


@converter("TFOpLambda")
def tf_op_lambda(ctx: LayerContext) -> list[Value]:
    function = str(ctx.option("function", ""))
    name = function.removeprefix("compat.v1.").removeprefix("math.")
    handler = TF_FUNCTIONS.get(name)
    if handler is None:
        raise ctx.unsupported(f"TensorFlow function tf.{function} is not supported (supported: "
                              f"{', '.join(sorted(TF_FUNCTIONS))}); write it with Keras layers or "
                              "export the model to TFLite first")
    if not ctx.args:
        raise ctx.unsupported("the call has no arguments")
    kwargs = {k: v for k, v in ctx.kwargs.items() if k != "name"}
    return [handler(ctx, ctx.args[0], kwargs)]


def _slice_items(ctx: LayerContext, spec: Any) -> list[Any]:
    if isinstance(spec, dict) and spec.get("class_name") == "__tuple__":
        spec = spec.get("items", [])
    return list(spec) if isinstance(spec, list) else [spec]


def _expand_ellipsis(ctx: LayerContext, items: list[Any], rank: int) -> list[Any]:
    full = {"start": None, "stop": None, "step": None}
    ellipses = [i for i, item in enumerate(items)
                if isinstance(item, dict) and item.get("class_name") == "__ellipsis__"]
    if len(ellipses) > 1:
        raise ctx.unsupported("a slice with more than one ellipsis is not valid")
    if ellipses:
        at = ellipses[0]
        items = items[:at] + [full] * (rank - len(items) + 1) + items[at + 1:]
    if len(items) > rank:
        raise ctx.unsupported(f"{len(items)} slice items for a rank-{rank} tensor (new axes are not supported)")
    return items + [full] * (rank - len(items))


def slice_value(ctx: LayerContext, x: Value, spec: Any) -> Value:
    """``x[spec]`` for a serialized Python index (see the module docstring)."""
    items = _expand_ellipsis(ctx, _slice_items(ctx, spec), x.rank)
    starts, ends, axes, squeeze = [], [], [], []
    for axis, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (int, dict)):
            raise ctx.unsupported(f"slice item {item!r} on axis {axis} is not supported")
        if isinstance(item, int):
            if not -x.shape[axis] <= item < x.shape[axis]:
                raise ctx.unsupported(f"index {item} is out of range for axis {axis} of {x.type_str()}")
            start, stop = item % x.shape[axis], item % x.shape[axis] + 1
            squeeze.append(axis)
        else:
            if item.get("step") not in (None, 1):
                raise ctx.unsupported(f"slice step {item.get('step')} on axis {axis} is not supported (only 1)")
            start, stop, _ = slice(item.get("start"), item.get("stop")).indices(x.shape[axis])
        if stop <= start:
            raise ctx.unsupported(f"the slice of axis {axis} is empty")
        if (start, stop) != (0, x.shape[axis]):
            starts.append(start)
            ends.append(stop)
            axes.append(axis)
    if 0 in squeeze or 0 in axes:
        raise ctx.unsupported("slicing the batch axis is not supported")
    y = x
    if axes:
        y = ctx.add("Slice", [x], {"starts": starts, "ends": ends, "axes": axes, "steps": [1] * len(axes)},
                    suffix="slice" if squeeze else "")
    if squeeze:
        y = ctx.add("Squeeze", [y], {"axes": squeeze})
    return y


@converter("SlicingOpLambda")
def slicing_op_lambda(ctx: LayerContext) -> list[Value]:
    return [slice_value(ctx, ctx.input(0), ctx.kwargs.get("slice_spec"))]
