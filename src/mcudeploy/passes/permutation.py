"""Axis permutations, as used by Transpose (``Y = X.transpose(perm)``, ``Y.shape[i] =
X.shape[perm[i]]``), and how quantization axes, shapes and constants follow them.

Conventions used by every layout pass:

* ``compose(first, second)``: ``X.transpose(first).transpose(second) ==
  X.transpose(compose(first, second))``, i.e. ``result[i] = first[second[i]]``.
* A tensor transposed by ``perm`` has its old axis ``k`` at position ``inverse(perm)[k]``.
"""
from __future__ import annotations

import numpy as np

from ..ir import QuantParams

Perm = tuple[int, ...]

NCHW_TO_NHWC: Perm = (0, 2, 3, 1)
NHWC_TO_NCHW: Perm = (0, 3, 1, 2)


def inverse(perm: Perm) -> Perm:
    result = [0] * len(perm)
    for position, axis in enumerate(perm):
        result[axis] = position
    return tuple(result)


def compose(first: Perm, second: Perm) -> Perm:
    """The single permutation equal to transposing by ``first`` and then by ``second``."""
    return tuple(first[axis] for axis in second)


def is_identity(perm: Perm) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


def permute_shape(shape: tuple[int, ...], perm: Perm) -> tuple[int, ...]:
    return tuple(shape[axis] for axis in perm)


def keeps_memory_order(shape: tuple[int, ...], perm: Perm) -> bool:
    """True when transposing ``shape`` by ``perm`` only moves size-1 axes, so the element
    order in memory is unchanged and the Transpose is really a Reshape."""
    moved = [axis for axis in perm if shape[axis] != 1]
    return moved == sorted(moved)


def permute_quant(quant: QuantParams | None, perm: Perm) -> QuantParams | None:
    """Quantization parameters of ``X.transpose(perm)`` given those of ``X``."""
    if quant is None or quant.axis is None:
        return quant
    axis = quant.axis % len(perm)
    return QuantParams(quant.scale, quant.zero_point, inverse(perm)[axis])


def permute_constant(array: np.ndarray, perm: Perm) -> np.ndarray:
    """``array`` broadcast-aligned to ``len(perm)`` axes (leading 1s added) and transposed.

    A constant that is the same along every axis it would move (a scalar, a ``[1]``) is
    returned unchanged, so broadcasting constants keep their small shapes.
    """
    rank = len(perm)
    if array.ndim > rank:
        raise ValueError(f"constant of rank {array.ndim} cannot follow a rank-{rank} permutation")
    if array.size == 1:
        return array
    aligned = array.reshape((1,) * (rank - array.ndim) + array.shape)
    return np.ascontiguousarray(aligned.transpose(perm))
