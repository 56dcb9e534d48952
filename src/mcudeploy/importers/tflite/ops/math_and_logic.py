"""Elementwise math, comparisons and selection: MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, POW,
RSQRT, SQRT, EXP, LOG, ABS, NEG, FLOOR, CEIL, ROUND, SIN, COS, ELU, GELU, LOG_SOFTMAX,
LOCAL_RESPONSE_NORMALIZATION, the comparisons, LOGICAL_AND / OR / NOT, SELECT / SELECT_V2.

* NEG: ``Mul(X, -1)`` for float, ``Sub(0, X)`` for int32 / int64 (exact); quantized NEG
  has no TFLite Micro kernel and is refused.
* LOG_SOFTMAX is over the last axis.
* LOCAL_RESPONSE_NORMALIZATION (NHWC, ``radius``) is the IR LRN with ``size = 2 radius + 1``
  and ``alpha = alpha_tfl * size`` (the IR divides by size, as ONNX).
"""
from __future__ import annotations

import numpy as np

from ....ir import Value
from ..common import converter
from ..context import ConversionContext

BINARY: dict[str, str | None] = {"MAXIMUM": "Max", "MINIMUM": "Min", "SQUARED_DIFFERENCE": "SquaredDifference",
          "POW": "Pow", "EQUAL": "Equal", "NOT_EQUAL": None, "LESS": "Less", "GREATER": "Greater",
          "LESS_EQUAL": "LessOrEqual", "GREATER_EQUAL": "GreaterOrEqual",
          "LOGICAL_AND": "And", "LOGICAL_OR": "Or"}
UNARY = {"RSQRT": "Rsqrt", "SQRT": "Sqrt", "EXP": "Exp", "LOG": "Log", "ABS": "Abs",
         "FLOOR": "Floor", "CEIL": "Ceil", "ROUND": "Round", "SIN": "Sin", "COS": "Cos",
         "LOGICAL_NOT": "Not", "LOG_SOFTMAX": "LogSoftmax", "ELU": "Elu"}


@converter(*(name for name, op in BINARY.items() if op))
def binary(ctx: ConversionContext) -> None:
    a, b = ctx.require_input(0, "first operand"), ctx.require_input(1, "second operand")
    op = BINARY[ctx.operator.op_name]
    assert op is not None  # registered only for the ops with an IR op of their own
    ctx.add_node(op, [a, b])


@converter("NOT_EQUAL")
def not_equal(ctx: ConversionContext) -> None:
    a, b = ctx.require_input(0, "first operand"), ctx.require_input(1, "second operand")
    equal = ctx.add_helper("Equal", [a, b], suffix="equal", main=True)
    ctx.add_node("Not", [equal], suffix="not")


@converter(*UNARY)
def unary(ctx: ConversionContext) -> None:
    ctx.add_node(UNARY[ctx.operator.op_name], [ctx.require_input(0, "input")])


@converter("GELU")
def gelu(ctx: ConversionContext) -> None:
    approximate = "tanh" if ctx.options.get("approximate") else "none"
    ctx.add_node("Gelu", [ctx.require_input(0, "input")], {"approximate": approximate})


@converter("NEG")
def neg(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    if x.quant is not None:
        raise ctx.unsupported("quantized NEG has no TFLite Micro kernel; keep it in float")
    name = ctx.graph.unique_name(f"{ctx.node_name}/constant")
    if x.dtype.is_float:
        ctx.add_node("Mul", [x, Value.constant(name, np.array(-1, x.dtype.numpy))])
    else:
        ctx.add_node("Sub", [Value.constant(name, np.array(0, x.dtype.numpy)), x])


@converter("SELECT", "SELECT_V2")
def select(ctx: ConversionContext) -> None:
    inputs = [ctx.require_input(i, what) for i, what in enumerate(("condition", "x", "y"))]
    ctx.add_node("Where", inputs)


@converter("LOCAL_RESPONSE_NORMALIZATION")
def local_response_normalization(ctx: ConversionContext) -> None:
    options = ctx.options
    size = 2 * int(options.get("radius", 5)) + 1
    attrs = {"size": size, "alpha": float(options.get("alpha", 1.0)) * size,
             "beta": float(options.get("beta", 0.5)), "bias": float(options.get("bias", 1.0)),
             "layout": "NHWC"}
    ctx.add_node("LRN", [ctx.require_input(0, "input")], attrs)
