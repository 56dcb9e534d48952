"""Elementwise ops and activations.

ADD / SUB / MUL / DIV -> Add / Sub / Mul / Div with the fused clamp; RELU -> Relu;
RELU6 -> Clip(0, 6); RELU_N1_TO_1 -> Clip(-1, 1); LOGISTIC -> Sigmoid; TANH -> Tanh;
HARD_SWISH -> HardSwish; LEAKY_RELU -> LeakyRelu(alpha); PRELU -> PRelu(x, alpha);
SOFTMAX -> Softmax(axis -1, beta), with ``output_dtype`` set when the stored output type
differs from the input's (int8 -> int16).
Quantized operands keep their own quantization parameters (on the values).
"""
from __future__ import annotations

from typing import Any

from ..common import converter, fused_activation
from ..context import ConversionContext

BINARY = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div"}
UNARY = {"RELU": ("Relu", {}), "RELU6": ("Clip", {"min": 0.0, "max": 6.0}),
         "RELU_N1_TO_1": ("Clip", {"min": -1.0, "max": 1.0}), "LOGISTIC": ("Sigmoid", {}),
         "TANH": ("Tanh", {}), "HARD_SWISH": ("HardSwish", {})}


@converter(*BINARY)
def binary(ctx: ConversionContext) -> None:
    a, b = ctx.require_input(0, "first operand"), ctx.require_input(1, "second operand")
    ctx.add_node(BINARY[ctx.operator.op_name], [a, b], fused_activation(ctx))


@converter(*UNARY)
def unary(ctx: ConversionContext) -> None:
    op, attrs = UNARY[ctx.operator.op_name]
    ctx.add_node(op, [ctx.require_input(0, "input")], attrs)


@converter("LEAKY_RELU")
def leaky_relu(ctx: ConversionContext) -> None:
    ctx.add_node("LeakyRelu", [ctx.require_input(0, "input")],
                 {"alpha": float(ctx.options.get("alpha", 0.0))})


@converter("PRELU")
def prelu(ctx: ConversionContext) -> None:
    ctx.add_node("PRelu", [ctx.require_input(0, "input"), ctx.require_input(1, "alpha")])


@converter("SOFTMAX")
def softmax(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    attrs: dict[str, Any] = {"axis": -1, "beta": float(ctx.options.get("beta", 1.0))}
    output_dtype = ctx.output_dtype()
    if output_dtype != x.dtype and output_dtype.value in ("int8", "int16"):
        attrs["output_dtype"] = output_dtype.value
    ctx.add_node("Softmax", [x], attrs)
