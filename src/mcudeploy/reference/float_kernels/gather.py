"""Indexing kernels: Gather, GatherElements, GatherND, ScatterElements, ScatterND, OneHot.
Negative indices count from the end of their axis; an index outside ``[-dim, dim)`` is a
:class:`DataError` naming the node (TFLite Micro and onnxruntime refuse them too).
Scatters apply updates in row-major order of ``indices``; ``reduction`` none overwrites, so
with repeated indices the last update wins."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...errors import DataError
from ...ir import Node
from .registry import kernel


def normalized(node: Node, indices: np.ndarray, dim: int) -> np.ndarray:
    """``indices`` as non-negative int64 below ``dim``; :class:`DataError` when out of range."""
    indices = np.asarray(indices, dtype=np.int64)
    if indices.size and (indices.min() < -dim or indices.max() >= dim):
        raise DataError(f"node {node.name!r} ({node.op}): index out of range [{-dim}, {dim}) "
                        f"(min {indices.min()}, max {indices.max()})")
    return np.where(indices < 0, indices + dim, indices)


@kernel("Gather")
def gather(node: Node, inputs: list) -> list[np.ndarray]:
    x, indices = inputs
    axis = node.attrs["axis"] % x.ndim
    return [np.take(x, normalized(node, indices, x.shape[axis]), axis=axis)]


@kernel("GatherElements")
def gather_elements(node: Node, inputs: list) -> list[np.ndarray]:
    x, indices = inputs
    axis = node.attrs["axis"] % x.ndim
    return [np.take_along_axis(x, normalized(node, indices, x.shape[axis]), axis=axis)]


def _nd_positions(node: Node, x_shape: tuple, indices: np.ndarray) -> np.ndarray:
    depth = indices.shape[-1]
    columns = [normalized(node, indices[..., i], x_shape[i]) for i in range(depth)]
    return np.stack(columns, axis=-1) if columns else indices.astype(np.int64)


@kernel("GatherND")
def gather_nd(node: Node, inputs: list) -> list[np.ndarray]:
    x, indices = inputs
    batch = node.attrs["batch_dims"]
    flat_x = x.reshape((-1,) + x.shape[batch:])
    flat_indices = indices.reshape((-1,) + indices.shape[batch:])
    parts = []
    for b in range(flat_x.shape[0]):
        positions = _nd_positions(node, flat_x.shape[1:], flat_indices[b])
        parts.append(flat_x[b][tuple(np.moveaxis(positions, -1, 0))])
    result = np.stack(parts) if parts else np.zeros((0,), x.dtype)
    return [result.reshape(node.outputs[0].shape)]


_COMBINE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter(node: Node, data: np.ndarray, positions: list, updates: Sequence[np.ndarray]) -> np.ndarray:
    """``data`` with ``updates[j]`` combined into ``data[positions[j]]``, j in order."""
    out = data.copy()
    combine = _COMBINE.get(node.attrs["reduction"])
    for position, update in zip(positions, updates):
        out[position] = update if combine is None else combine(out[position], update)
    return out


@kernel("ScatterElements")
def scatter_elements(node: Node, inputs: list) -> list[np.ndarray]:
    x, indices, updates = inputs
    axis = node.attrs["axis"] % x.ndim
    index = normalized(node, indices, x.shape[axis])
    positions = []
    for coordinate in np.ndindex(*indices.shape):
        target = list(coordinate)
        target[axis] = int(index[coordinate])
        positions.append(tuple(target))
    return [_scatter(node, x, positions, [updates[c] for c in np.ndindex(*indices.shape)])]


@kernel("ScatterND")
def scatter_nd(node: Node, inputs: list) -> list[np.ndarray]:
    x, indices, updates = inputs
    flat = _nd_positions(node, x.shape, indices).reshape(-1, indices.shape[-1])
    slices = updates.reshape((flat.shape[0],) + x.shape[indices.shape[-1]:])
    return [_scatter(node, x, [tuple(row) for row in flat], list(slices))]


@kernel("OneHot")
def one_hot(node: Node, inputs: list) -> list[np.ndarray]:
    indices, values = inputs
    depth = node.attrs["depth"]
    axis = node.attrs["axis"] % (indices.ndim + 1)
    index = np.asarray(indices).astype(np.int64)
    index = np.where(index < 0, index + depth, index)
    hot = np.expand_dims(index, axis) == np.arange(depth).reshape(
        (1,) * axis + (depth,) + (1,) * (indices.ndim - axis))
    return [np.where(hot, values[1], values[0]).astype(values.dtype)]
