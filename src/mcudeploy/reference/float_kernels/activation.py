"""Unary activations, computed in float64 and rounded once to the output dtype.

Sigmoid uses ``exp(-|x|)`` so it never overflows; Softmax subtracts the maximum along the
axis first: ``Y = exp(beta*X - max) / sum(exp(beta*X - max))``.

ONNX's other activations (Elu, Selu, Celu, ThresholdedRelu, Softplus, Softsign, Mish, Gelu,
Shrink, Swish) go through :func:`.unary_math.table_kernel`; LogSoftmax and Hardmax are over
one axis. Softplus is ``max(x, 0) + ln(1 + exp(-|x|))`` (no overflow); LogSoftmax is
``z - ln(sum exp(z))`` with ``z = X - max``; Hardmax puts 1 at the first maximum.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel
from .unary_math import erf, table_kernel


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


def _softplus(x: np.ndarray) -> np.ndarray:
    """``ln(1 + exp(x))`` without overflow: ``max(x, 0) + ln(1 + exp(-|x|))``."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _gelu(x: np.ndarray, node: Node) -> np.ndarray:
    if node.attrs["approximate"] == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _shrink(x: np.ndarray, node: Node) -> np.ndarray:
    bias, lambd = node.attrs["bias"], node.attrs["lambd"]
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0.0))


ACTIVATIONS = {
    "Elu": lambda x, node: np.where(x >= 0, x, node.attrs["alpha"] * np.expm1(x)),
    "Selu": lambda x, node: node.attrs["gamma"] * np.where(
        x > 0, x, node.attrs["alpha"] * np.expm1(x)),
    "Celu": lambda x, node: np.maximum(x, 0.0) + np.minimum(
        0.0, node.attrs["alpha"] * np.expm1(x / node.attrs["alpha"])),
    "ThresholdedRelu": lambda x, node: np.where(x > node.attrs["alpha"], x, 0.0),
    "Softplus": lambda x, node: _softplus(x),
    "Softsign": lambda x, node: x / (1.0 + np.abs(x)),
    "Mish": lambda x, node: x * np.tanh(_softplus(x)),
    "Gelu": _gelu,
    "Shrink": _shrink,
    "Swish": lambda x, node: x * _sigmoid(node.attrs["alpha"] * x),
}

for _op_name in ACTIVATIONS:
    kernel(_op_name)(table_kernel(ACTIVATIONS))


@kernel("LogSoftmax")
def log_softmax(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    z = x - np.max(x, axis=node.attrs["axis"], keepdims=True)
    y = z - np.log(np.sum(np.exp(z), axis=node.attrs["axis"], keepdims=True))
    return [y.astype(output_dtype(node))]


@kernel("Hardmax")
def hardmax(node: Node, inputs: list) -> list[np.ndarray]:
    x, axis = inputs[0], node.attrs["axis"] % inputs[0].ndim
    first = np.expand_dims(np.argmax(x, axis=axis), axis)
    y = np.zeros(x.shape, dtype=x.dtype)
    np.put_along_axis(y, first, 1, axis=axis)
    return [y]
