"""Normalisations in float64, rounded once.

BatchNormalization (inference): ``Y = (X - mean) / sqrt(var + epsilon) * scale + B`` per
channel. The channel axis is the layout's for rank-4 inputs, else axis 1 (axis 0 for rank
1), as in :mod:`mcudeploy.ir.opdefs.normalization`.

LRN, LayerNormalization, RMSNormalization, InstanceNormalization, GroupNormalization,
LpNormalization and MeanVarianceNormalization compute their statistics from the input.
LRN's window sum of squares is the sum of ``size`` shifted copies of the zero-padded
squares along the channel axis (``floor((size-1)/2)`` before, ``ceil((size-1)/2)`` after).
Variances are ``avg((X - mean)^2)``, except MeanVarianceNormalization, which follows ONNX's
function body: ``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)``.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


@kernel("BatchNormalization")
def batch_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x, scale, bias, mean, var = (wide(a) for a in inputs[:5])
    if x.ndim == 4:
        axis = 1 if node.attrs["layout"] == "NCHW" else 3
    else:
        axis = min(1, x.ndim - 1)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def per_channel(a: np.ndarray) -> np.ndarray:
        return a.reshape(shape)

    inverse = per_channel(scale) / np.sqrt(per_channel(var) + node.attrs["epsilon"])
    y = (x - per_channel(mean)) * inverse + per_channel(bias)
    return [y.astype(output_dtype(node))]


def _channel_axis(node: Node, x: np.ndarray) -> int:
    return x.ndim - 1 if node.attrs.get("layout") == "NHWC" else 1


@kernel("LRN")
def lrn(node: Node, inputs: list) -> list[np.ndarray]:
    x, attrs = wide(inputs[0]), node.attrs
    size = attrs["size"]
    moved = np.moveaxis(x, _channel_axis(node, x), -1)
    channels = moved.shape[-1]
    before = (size - 1) // 2
    padded = np.pad(moved * moved, [(0, 0)] * (moved.ndim - 1) + [(before, size - 1 - before)])
    total = sum(padded[..., i:i + channels] for i in range(size))
    y = moved / (attrs["bias"] + attrs["alpha"] / size * total) ** attrs["beta"]
    return [np.moveaxis(y, -1, _channel_axis(node, x)).astype(output_dtype(node))]


def _standardize(x: np.ndarray, axes: tuple, epsilon: float) -> tuple[np.ndarray, ...]:
    """``((x - mean) * inv_std, mean, inv_std)`` over ``axes`` (kept as size 1)."""
    mean = x.mean(axis=axes, keepdims=True)
    inverse = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + epsilon)
    return (x - mean) * inverse, mean, inverse


@kernel("LayerNormalization")
def layer_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    axes = tuple(range(node.attrs["axis"] % x.ndim, x.ndim))
    normalized, mean, inverse = _standardize(x, axes, node.attrs["epsilon"])
    y = normalized * wide(inputs[1])
    if len(inputs) > 2 and inputs[2] is not None:
        y = y + wide(inputs[2])
    return [y.astype(output_dtype(node, 0)), mean.astype(output_dtype(node, 1)),
            inverse.astype(output_dtype(node, 2))]


@kernel("RMSNormalization")
def rms_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    axes = tuple(range(node.attrs["axis"] % x.ndim, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + node.attrs["epsilon"])
    return [(y * wide(inputs[1])).astype(output_dtype(node))]


def _per_channel(array: np.ndarray, rank: int, axis: int) -> np.ndarray:
    shape = [1] * rank
    shape[axis] = array.size
    return wide(array).reshape(shape)


@kernel("InstanceNormalization")
def instance_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    axis = _channel_axis(node, x)
    spatial = tuple(a for a in range(1, x.ndim) if a != axis)
    normalized, _, _ = _standardize(x, spatial, node.attrs["epsilon"])
    y = normalized * _per_channel(inputs[1], x.ndim, axis) + _per_channel(inputs[2], x.ndim, axis)
    return [y.astype(output_dtype(node))]


@kernel("GroupNormalization")
def group_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    groups = node.attrs["num_groups"]
    grouped = x.reshape(x.shape[0], groups, -1)
    normalized, _, _ = _standardize(grouped, (2,), node.attrs["epsilon"])
    y = normalized.reshape(x.shape) * _per_channel(inputs[1], x.ndim, 1) \
        + _per_channel(inputs[2], x.ndim, 1)
    return [y.astype(output_dtype(node))]


@kernel("LpNormalization")
def lp_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    axis, p = node.attrs["axis"] % x.ndim, node.attrs["p"]
    norm = np.abs(x).sum(axis=axis, keepdims=True) if p == 1 else \
        np.sqrt((x * x).sum(axis=axis, keepdims=True))
    with np.errstate(all="ignore"):
        return [(x / norm).astype(output_dtype(node))]


@kernel("MeanVarianceNormalization")
def mean_variance_normalization(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(inputs[0])
    axes = tuple(sorted({a % x.ndim for a in node.attrs["axes"]}))
    mean = x.mean(axis=axes, keepdims=True)
    deviation = np.sqrt(np.maximum((x * x).mean(axis=axes, keepdims=True) - mean * mean, 0.0))
    return [((x - mean) / (deviation + 1e-9)).astype(output_dtype(node))]
