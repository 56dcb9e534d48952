"""Resize: one axis at a time, by the ONNX formulas, in float64.

With ``scale = out / in`` per axis, output coordinate ``o`` maps to input coordinate ``x``:

* ``half_pixel``: ``x = (o + 0.5) / scale - 0.5``
* ``pytorch_half_pixel``: the same when ``out > 1``, else ``x = 0``
* ``asymmetric``: ``x = o / scale``
* ``tf_half_pixel_for_nn``: ``x = (o + 0.5) / scale``
* ``align_corners``: ``x = o * (in - 1) / (out - 1)`` (``x = 0`` when ``out == 1``)

Nearest rounds ``x`` by ``nearest_mode`` (``round_prefer_floor = ceil(x - 0.5)``,
``round_prefer_ceil = floor(x + 0.5)``, ``floor``, ``ceil``) and clamps the index to
``[0, in - 1]``. Linear takes ``i = floor(x)``, ``w = x - i`` and
``Y = (1 - w) * X[clamp(i)] + w * X[clamp(i + 1)]``, which repeats the edge outside the
input as the ONNX reference does. Multilinear resize is the composition over the axes.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


def source_coordinates(out_size: int, in_size: int, mode: str) -> np.ndarray:
    """Input coordinate of every output index along one axis."""
    scale = out_size / in_size
    o = np.arange(out_size, dtype=np.float64)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_size > 1 else np.zeros(1)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if mode == "align_corners":
        return o * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(1)
    raise ValueError(f"unknown coordinate_transformation_mode {mode!r}")


_ROUNDING: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "round_prefer_floor": lambda x: np.ceil(x - 0.5),
    "round_prefer_ceil": lambda x: np.floor(x + 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


def _nearest_axis(x: np.ndarray, axis: int, out_size: int, node: Node) -> np.ndarray:
    mode = node.attrs["coordinate_transformation_mode"]
    coordinates = source_coordinates(out_size, x.shape[axis], mode)
    index = _ROUNDING[node.attrs["nearest_mode"]](coordinates).astype(np.int64)
    return np.take(x, np.clip(index, 0, x.shape[axis] - 1), axis=axis)


def _linear_axis(x: np.ndarray, axis: int, out_size: int, node: Node) -> np.ndarray:
    in_size = x.shape[axis]
    mode = node.attrs["coordinate_transformation_mode"]
    coordinates = source_coordinates(out_size, in_size, mode)
    low = np.floor(coordinates)
    weight_shape = [1] * x.ndim
    weight_shape[axis] = out_size
    weight = (coordinates - low).reshape(weight_shape)
    low = low.astype(np.int64)
    first = np.take(x, np.clip(low, 0, in_size - 1), axis=axis)
    second = np.take(x, np.clip(low + 1, 0, in_size - 1), axis=axis)
    return first * (1.0 - weight) + second * weight


@kernel("Resize")
def resize(node: Node, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    linear = node.attrs["mode"] == "linear"
    y = wide(x).astype(np.float64) if linear else x
    for axis, out_size in enumerate(node.attrs["sizes"]):
        if out_size != x.shape[axis]:
            y = (_linear_axis if linear else _nearest_axis)(y, axis, out_size, node)
    if linear and not np.issubdtype(output_dtype(node), np.floating):
        y = np.rint(y)
    return [np.ascontiguousarray(y).astype(output_dtype(node), copy=False)]
