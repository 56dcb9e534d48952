"""Gemm and MatMul, accumulated in float64 (int64 for integer operands).

Gemm: ``Y = alpha * op(A) @ op(B) + beta * C`` then the fused clamp; MatMul: ``numpy.matmul``.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import finish, output_dtype, wide
from .registry import kernel


@kernel("Gemm")
def gemm(node: Node, inputs: list) -> list[np.ndarray]:
    a, b = wide(inputs[0]), wide(inputs[1])
    c = inputs[2] if len(inputs) > 2 else None
    if node.attrs["transA"]:
        a = a.T
    if node.attrs["transB"]:
        b = b.T
    y = node.attrs["alpha"] * (a @ b) if node.attrs["alpha"] != 1.0 else a @ b
    if c is not None:
        y = y + (node.attrs["beta"] * wide(c) if node.attrs["beta"] != 1.0 else wide(c))
    return finish(y, node)


@kernel("MatMul")
def matmul(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.matmul(wide(inputs[0]), wide(inputs[1])).astype(output_dtype(node), copy=False)]
