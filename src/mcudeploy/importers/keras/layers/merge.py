"""Merge layers -> IR binary ops, chained over the inputs with numpy broadcasting:
``Add(a, b, c) = Add(Add(a, b), c)`` (the inner nodes ``<layer>/<i>``, the last one the
layer), likewise Multiply, Maximum, Minimum; ``Subtract(a, b) = Sub``;
``Average(x_1..x_n) = Mul(Add(...), 1/n)``; ``Concatenate(axis)`` -> Concat.
"""
from __future__ import annotations

import numpy as np

from ....ir import Value
from ..context import LayerContext
from ..registry import converter

CHAINS = {"Add": "Add", "Multiply": "Mul", "Maximum": "Max", "Minimum": "Min"}


def _operands(ctx: LayerContext, minimum: int = 2) -> list[Value]:
    if len(ctx.inputs) < minimum:
        raise ctx.unsupported(f"needs at least {minimum} inputs, the call passes {len(ctx.inputs)}")
    for value in ctx.inputs:
        ctx.check_float(value)
    return ctx.inputs


def _chain(ctx: LayerContext, op: str, operands: list[Value], *, last_suffix: str = "") -> Value:
    result = operands[0]
    for position, operand in enumerate(operands[1:], start=1):
        final = position == len(operands) - 1
        result = ctx.add(op, [result, operand], suffix=last_suffix if final else str(position))
    return result


@converter(*CHAINS)
def chained(ctx: LayerContext) -> list[Value]:
    return [_chain(ctx, CHAINS[ctx.layer.class_name], _operands(ctx))]


@converter("Subtract")
def subtract(ctx: LayerContext) -> list[Value]:
    operands = _operands(ctx)
    if len(operands) != 2:
        raise ctx.unsupported(f"Subtract takes exactly 2 inputs, the call passes {len(operands)}")
    return [ctx.add("Sub", operands)]


@converter("Average")
def average(ctx: LayerContext) -> list[Value]:
    operands = _operands(ctx)
    total = _chain(ctx, "Add", operands, last_suffix="sum")
    scale = ctx.constant(np.array(1.0 / len(operands), dtype=np.float32), "scale")
    return [ctx.add("Mul", [total, scale])]


@converter("Concatenate")
def concatenate(ctx: LayerContext) -> list[Value]:
    operands = _operands(ctx, 1)
    axis = int(ctx.option("axis", -1))
    rank = operands[0].rank
    if not -rank <= axis < rank:
        raise ctx.unsupported(f"axis {axis} is out of range for {operands[0].type_str()}")
    return [ctx.add("Concat", operands, {"axis": axis % rank})]
