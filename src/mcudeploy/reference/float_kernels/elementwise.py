"""Binary elementwise ops (numpy broadcasting, then the fused clamp) and PRelu.

A single add / subtract / multiply / divide is correctly rounded in the input dtype, so
it runs in that dtype (bit-identical to onnxruntime and LiteRT). Integer Div truncates
toward zero (ONNX): ``q = sign(a) * sign(b) * (|a| // |b|)``; division by zero gives 0.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...ir import Node
from ._common import finish
from .registry import kernel


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.integer):
        wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
        divisor = np.where(wide_b == 0, 1, np.abs(wide_b))
        magnitude = np.where(wide_b == 0, 0, np.abs(wide_a) // divisor)
        return np.sign(wide_a) * np.sign(wide_b) * magnitude
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _divide}


def _binary(node: Node, inputs: list) -> list[np.ndarray]:
    with np.errstate(over="ignore"):
        return finish(_BINARY[node.op](inputs[0], inputs[1]), node)


for _op_name in _BINARY:
    kernel(_op_name)(_binary)


@kernel("PRelu")
def prelu(node: Node, inputs: list) -> list[np.ndarray]:
    x, slope = inputs
    return finish(np.where(x >= 0, x, slope * x), node)
