"""Binary kernels beyond Add / Sub / Mul / Div (numpy broadcasting): Max, Min,
SquaredDifference, Pow, Mod, BitShift, the bitwise ops; and the logical family
(comparisons, And / Or / Xor / Not, IsNaN, IsInf, Where) and Cast.

Max / Min propagate NaN (``np.maximum``), as onnxruntime. SquaredDifference computes
``(A - B)^2`` in float64 and rounds once. Pow: float64 power rounded to X's dtype
(integers truncated toward zero). Mod: ``fmod=1`` is C ``fmod`` (sign of A), ``fmod=0``
Python's ``%`` (sign of B); an integer divisor 0 gives 0.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype
from .registry import kernel


def _squared_difference(a, b, node):
    if np.issubdtype(a.dtype, np.floating):
        a, b = a.astype(np.float64), b.astype(np.float64)
    return (a - b) * (a - b)


def _pow(x, y, node):
    if np.issubdtype(x.dtype, np.integer) and np.issubdtype(y.dtype, np.integer):
        return np.power(x.astype(np.int64), y.astype(np.int64))
    result = np.power(x.astype(np.float64), y.astype(np.float64))
    return np.trunc(result) if np.issubdtype(x.dtype, np.integer) else result


def _mod(a, b, node):
    if node.attrs["fmod"]:
        return np.fmod(a, b)
    if np.issubdtype(a.dtype, np.integer):
        return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b)))
    return np.mod(a, b)


def _bit_shift(a, b, node):
    bits = np.dtype(a.dtype).itemsize * 8
    shifted = np.left_shift(a, b) if node.attrs["direction"] == "LEFT" else np.right_shift(a, b)
    return np.where(b >= bits, 0, shifted)


_BINARY = {
    "Max": lambda a, b, node: np.maximum(a, b),
    "Min": lambda a, b, node: np.minimum(a, b),
    "SquaredDifference": _squared_difference,
    "Pow": _pow,
    "Mod": _mod,
    "BitShift": _bit_shift,
    "BitwiseAnd": lambda a, b, node: np.bitwise_and(a, b),
    "BitwiseOr": lambda a, b, node: np.bitwise_or(a, b),
    "BitwiseXor": lambda a, b, node: np.bitwise_xor(a, b),
    "Equal": lambda a, b, node: np.equal(a, b),
    "Less": lambda a, b, node: np.less(a, b),
    "Greater": lambda a, b, node: np.greater(a, b),
    "LessOrEqual": lambda a, b, node: np.less_equal(a, b),
    "GreaterOrEqual": lambda a, b, node: np.greater_equal(a, b),
    "And": lambda a, b, node: np.logical_and(a, b),
    "Or": lambda a, b, node: np.logical_or(a, b),
    "Xor": lambda a, b, node: np.logical_xor(a, b),
}


def _binary(node: Node, inputs: list) -> list[np.ndarray]:
    with np.errstate(all="ignore"):
        result = np.asarray(_BINARY[node.op](inputs[0], inputs[1], node))
    return [result.astype(output_dtype(node), copy=False)]


for _op_name in _BINARY:
    kernel(_op_name)(_binary)


def _is_inf(x: np.ndarray, node: Node) -> np.ndarray:
    negative = np.isneginf(x) if node.attrs["detect_negative"] else np.zeros(x.shape, bool)
    positive = np.isposinf(x) if node.attrs["detect_positive"] else np.zeros(x.shape, bool)
    return negative | positive


_UNARY = {
    "BitwiseNot": lambda x, node: np.invert(x),
    "Not": lambda x, node: np.logical_not(x),
    "IsNaN": lambda x, node: np.isnan(x),
    "IsInf": _is_inf,
}


def _unary(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.asarray(_UNARY[node.op](inputs[0], node)).astype(output_dtype(node), copy=False)]


for _op_name in _UNARY:
    kernel(_op_name)(_unary)


@kernel("Where")
def where(node: Node, inputs: list) -> list[np.ndarray]:
    condition, x, y = inputs
    return [np.where(condition, x, y).astype(output_dtype(node), copy=False)]


@kernel("Cast")
def cast(node: Node, inputs: list) -> list[np.ndarray]:
    """numpy ``astype``: float -> integer truncates toward zero, float -> bool is ``!= 0``."""
    with np.errstate(all="ignore"):
        return [inputs[0].astype(output_dtype(node))]
