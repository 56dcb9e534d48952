"""Helpers shared by the float kernels: working precision, fused clamp, layouts."""
from __future__ import annotations

import numpy as np

from ...ir import Node


def wide(array: np.ndarray) -> np.ndarray:
    """``array`` in the accumulation dtype: float64 for floats, int64 for integers."""
    if np.issubdtype(array.dtype, np.floating):
        return array.astype(np.float64, copy=False)
    if np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_:
        return array.astype(np.int64, copy=False)
    return array


def output_dtype(node: Node, index: int = 0) -> np.dtype:
    return node.outputs[index].dtype.numpy


def clamp(array: np.ndarray, node: Node) -> np.ndarray:
    """The fused activation: clip to ``[activation_min, activation_max]`` (None = unbounded)."""
    low, high = node.attrs.get("activation_min"), node.attrs.get("activation_max")
    if low is None and high is None:
        return array
    return np.clip(array, low, high)


def finish(array: np.ndarray, node: Node) -> list[np.ndarray]:
    """Apply the fused clamp and round once to the output value's dtype."""
    return [clamp(array, node).astype(output_dtype(node), copy=False)]


def to_nhwc(array: np.ndarray, layout: str) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if layout == "NCHW" else array


def from_nhwc(array: np.ndarray, layout: str) -> np.ndarray:
    return array.transpose(0, 3, 1, 2) if layout == "NCHW" else array


def nhwc_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """A rank-4 shape of ``layout`` written in NHWC order."""
    return (shape[0], shape[2], shape[3], shape[1]) if layout == "NCHW" else tuple(shape)


def windows(padded: np.ndarray, out_hw: tuple[int, ...], kernel_hw: tuple[int, ...],
            strides: tuple[int, ...], dilations: tuple[int, ...]) -> np.ndarray:
    """A read-only strided view ``[N, OH, OW, kH, kW, C]`` of the sliding windows of an
    NHWC array: ``view[n, y, x, i, j, c] = padded[n, y*sH + i*dH, x*sW + j*dW, c]``."""
    sn, sh, sw, sc = padded.strides
    shape = (padded.shape[0], *out_hw, *kernel_hw, padded.shape[3])
    step = (sn, sh * strides[0], sw * strides[1], sh * dilations[0], sw * dilations[1], sc)
    return np.lib.stride_tricks.as_strided(padded, shape, step, writeable=False)


COLUMN_BLOCK_BYTES = 16 << 20


def row_blocks(view: np.ndarray) -> list[slice]:
    """Slices of the output rows of a :func:`windows` view whose im2col columns hold about
    :data:`COLUMN_BLOCK_BYTES` each (at least one row): the convolutions build the columns
    block by block, which keeps them in cache and never holds the whole matrix (a
    256 x 256 x 96 3x3 layer: 453 MB of float64 columns at once)."""
    n, rows, columns, kh, kw, channels = view.shape
    per_row = max(1, n * columns * kh * kw * channels * view.itemsize)
    count = max(1, min(rows, COLUMN_BLOCK_BYTES // per_row))
    return [slice(start, min(rows, start + count)) for start in range(0, rows, count)]


def grouped_products(view: np.ndarray, weights: np.ndarray, group: int, out_dtype) -> np.ndarray:
    """``[N, OH, OW, O]`` sums of a grouped convolution: im2col per group, ``[rows * OW,
    kH*kW*C/g] @ [kH*kW*C/g, O/g]`` in the dtype both promote to (an int8 weight ``[O, kH,
    kW, C/g]`` takes ``view``'s exact float dtype), block of output rows by block
    (:func:`row_blocks`), stored as ``out_dtype``."""
    n, oh, ow, kh, kw, channels = view.shape
    per_in, per_out = channels // group, weights.shape[0] // group
    out = np.empty((n, oh, ow, weights.shape[0]), out_dtype)
    compute = np.result_type(view.dtype, weights.dtype)
    matrices = [weights[g * per_out:(g + 1) * per_out].reshape(per_out, -1).astype(compute, copy=False).T
                for g in range(group)]
    for rows in row_blocks(view):
        block = view[:, rows]
        for g in range(group):
            columns = block[..., g * per_in:(g + 1) * per_in].reshape(-1, kh * kw * per_in).astype(compute, copy=False)
            out[:, rows, :, g * per_out:(g + 1) * per_out] = (columns @ matrices[g]).reshape(
                n, rows.stop - rows.start, ow, per_out)
    return out
