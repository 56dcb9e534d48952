"""Unary activations, computed in float64 and rounded once to the output dtype.

Sigmoid uses ``exp(-|x|)`` so it never overflows; Softmax subtracts the maximum along the
axis first: ``Y = exp(beta*X - max) / sum(exp(beta*X - max))``.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


def _sigmoid(x: np.ndarray) -> np.ndarray:
    small = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + small), small / (1.0 + small))


def _softmax(x: np.ndarray, node: Node) -> np.ndarray:
    z = node.attrs["beta"] * x
    z = np.exp(z - z.max(axis=node.attrs["axis"], keepdims=True))
    return z / z.sum(axis=node.attrs["axis"], keepdims=True)


_UNARY = {
    "Relu": lambda x, node: np.maximum(x, 0),
    "Sigmoid": lambda x, node: _sigmoid(x),
    "Tanh": lambda x, node: np.tanh(x),
    "HardSwish": lambda x, node: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
    "HardSigmoid": lambda x, node: np.clip(node.attrs["alpha"] * x + node.attrs["beta"], 0.0, 1.0),
    "LeakyRelu": lambda x, node: np.where(x >= 0, x, node.attrs["alpha"] * x),
    "Clip": lambda x, node: np.clip(x, node.attrs["min"], node.attrs["max"])
    if node.attrs["min"] is not None or node.attrs["max"] is not None else x,
    "Softmax": _softmax,
}


def _unary(node: Node, inputs: list) -> list[np.ndarray]:
    result = np.asarray(_UNARY[node.op](wide(inputs[0]), node))
    return [result.astype(output_dtype(node), copy=False)]


for _op_name in _UNARY:
    kernel(_op_name)(_unary)
