"""Elementwise math, logic and casts: the unary math ops and activations of the IR, Neg,
Reciprocal, variadic Sum / Mean / Max / Min, Pow, Mod, BitShift, the bitwise and
comparison ops, And / Or / Xor / Not, Where, IsNaN, IsInf, Cast, CastLike, LogSoftmax,
Hardmax.

Lowerings (exact):

* ``Neg(X)`` = ``Mul(X, -1)`` for floats (IEEE negation is exact), ``Sub(0, X)`` for integers;
* ``Reciprocal(X)`` = ``Div(1, X)`` (one correctly rounded division, as onnxruntime);
* ``Sum / Max / Min(a, b, c, ...)`` = the binary op applied left to right
  (``Add(Add(a, b), c)``, onnxruntime's order); one input is an ``Identity``;
* ``Mean(a, ..., n inputs)`` = ``Div(Sum(...), n)``.

``CastLike`` of a constant is a constant even when the dtype-giving input is computed.
"""
from __future__ import annotations

import numpy as np
import onnx

from ....ir import DType, Value
from ..context import ConversionContext
from .activation import emit_softmax_like
from .registry import converter

DIRECT_UNARY = {"Exp": (), "Log": (), "Sqrt": (), "Abs": (), "Sign": (), "Floor": (), "Ceil": (),
                "Round": (), "Erf": (), "Sin": (), "Cos": (), "Tan": (), "Asin": (), "Acos": (),
                "Atan": (), "Sinh": (), "Cosh": (), "Asinh": (), "Acosh": (), "Atanh": (),
                "Elu": ("alpha",), "Selu": ("alpha", "gamma"), "Celu": ("alpha",),
                "ThresholdedRelu": ("alpha",), "Softplus": (), "Softsign": (), "Mish": (),
                "Gelu": ("approximate",), "Shrink": ("bias", "lambd"), "Swish": ("alpha",),
                "Not": (), "IsNaN": (), "BitwiseNot": (),
                "IsInf": ("detect_negative", "detect_positive")}
DIRECT_BINARY = {"Pow": (), "Mod": ("fmod",), "BitShift": ("direction",), "BitwiseAnd": (),
                 "BitwiseOr": (), "BitwiseXor": (), "Equal": (), "Less": (), "Greater": (),
                 "LessOrEqual": (), "GreaterOrEqual": (), "And": (), "Or": (), "Xor": ()}
VARIADIC = {"Sum": "Add", "Max": "Max", "Min": "Min", "Mean": "Add"}


def _kept(ctx: ConversionContext, node: onnx.NodeProto, names: tuple[str, ...]) -> dict:
    attrs = ctx.attributes(node)
    return {key: attrs[key] for key in names if key in attrs}


@converter(*DIRECT_UNARY)
def convert_unary(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit(node.op_type, [ctx.input(node, 0)], _kept(ctx, node, DIRECT_UNARY[node.op_type]), node)


@converter(*DIRECT_BINARY)
def convert_binary(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    inputs = [ctx.input(node, 0), ctx.input(node, 1)]
    ctx.emit(node.op_type, inputs, _kept(ctx, node, DIRECT_BINARY[node.op_type]), node)


@converter("Where")
def convert_where(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("Where", [ctx.input(node, i) for i in range(3)], None, node)


def scalar(ctx: ConversionContext, node: onnx.NodeProto, value: float, like: Value,
           what: str) -> Value:
    """A scalar constant of ``like``'s dtype, named after ``node``."""
    return ctx.graph.add_constant(ctx.helper_name(node, what), np.array(value, like.dtype.numpy))


def output_names(ctx: ConversionContext, node: onnx.NodeProto, count: int) -> list[str]:
    """The first ``count`` output names of ``node``, omitted ones named ``<node>/unused_<i>``."""
    names = list(node.output) + [""] * (count - len(node.output))
    return [name or ctx.helper_name(node, f"unused_{i}") for i, name in enumerate(names[:count])]


@converter("Neg")
def convert_neg(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    if x.dtype.is_float:
        ctx.emit("Mul", [x, scalar(ctx, node, -1, x, "minus_one")], None, node)
    else:
        ctx.emit("Sub", [scalar(ctx, node, 0, x, "zero"), x], None, node)


@converter("Reciprocal")
def convert_reciprocal(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    ctx.emit("Div", [scalar(ctx, node, 1, x, "one"), x], None, node)


@converter(*VARIADIC)
def convert_variadic(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    """Left-to-right chain of the binary op; ``Mean`` divides the sum by the input count."""
    inputs = [ctx.value(name) for name in node.input if name]
    op, output = VARIADIC[node.op_type], node.output[0]
    if len(inputs) == 1 and node.op_type != "Mean":
        ctx.emit("Identity", inputs, None, node)
        return
    steps = len(inputs) - 1 + (node.op_type == "Mean")
    result = inputs[0]
    for index, operand in enumerate(inputs[1:], start=1):
        last = index == steps
        name = node.name if last else ctx.helper_name(node, f"{op.lower()}_{index}")
        result = ctx.emit(op, [result, operand], None, node, name=name,
                          outputs=[output if last else f"{output}/{op.lower()}_{index}"]).outputs[0]
    if node.op_type == "Mean":
        count = scalar(ctx, node, len(inputs), result, "count")
        ctx.emit("Div", [result, count], None, node, outputs=[output])


def onnx_dtype(ctx: ConversionContext, node: onnx.NodeProto, code: int) -> DType:
    """The IR dtype of ONNX element type ``code``; unsupported for types the IR lacks."""
    try:
        return DType.from_numpy(onnx.helper.tensor_dtype_to_np_dtype(code))
    except (ValueError, TypeError, KeyError):
        name = onnx.TensorProto.DataType.Name(code) if code in onnx.TensorProto.DataType.values() \
            else str(code)
        raise ctx.unsupported(node, f"element type {name} has no IR equivalent (supported: "
                              f"{', '.join(d.value for d in DType)})") from None


@converter("Cast")
def convert_cast(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    target = onnx_dtype(ctx, node, ctx.attributes(node)["to"])
    ctx.emit("Cast", [ctx.input(node, 0)], {"to": target.value}, node)


@converter("CastLike")
def convert_cast_like(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    name = node.input[1]
    array = ctx.constant(name)
    if array is None:
        target = ctx.values[name].dtype
    else:
        target = onnx_dtype(ctx, node, onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
    source = ctx.constant(node.input[0])
    if source is not None:  # only the dtype of the second input matters: a constant result
        ctx.constants[node.output[0]] = source.astype(target.numpy)
        return
    ctx.emit("Cast", [ctx.input(node, 0)], {"to": target.value}, node)


@converter("LogSoftmax", "Hardmax")
def convert_softmax_like(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    emit_softmax_like(ctx, node, node.op_type)
