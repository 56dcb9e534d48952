"""Data-movement kernels: Identity, Dropout, Reshape, Flatten, Squeeze, Unsqueeze,
Transpose, Concat, Split, Slice, Pad, DepthToSpace. They never change values (Pad adds new
ones); every shape operand is a static attribute.

DepthToSpace with block ``b`` and ``C = C' * b * b``: NCHW DCR reads channels as
``[b, b, C']``, CRD as ``[C', b, b]``; NHWC uses the same channel readings on the last axis.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import from_nhwc, to_nhwc
from .registry import kernel


@kernel("Identity")
@kernel("Dropout")
def identity(node: Node, inputs: list) -> list[np.ndarray]:
    return [inputs[0]]


@kernel("Reshape")
@kernel("Flatten")
@kernel("Squeeze")
@kernel("Unsqueeze")
def reshape(node: Node, inputs: list) -> list[np.ndarray]:
    """All four only regroup the row-major elements: the output value's shape says how."""
    return [inputs[0].reshape(node.outputs[0].shape)]


@kernel("Transpose")
def transpose(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.ascontiguousarray(inputs[0].transpose(node.attrs["perm"]))]


@kernel("Concat")
def concat(node: Node, inputs: list) -> list[np.ndarray]:
    return [np.concatenate(inputs, axis=node.attrs["axis"])]


@kernel("Split")
def split(node: Node, inputs: list) -> list[np.ndarray]:
    boundaries = np.cumsum(node.attrs["split"])[:-1]
    return [np.ascontiguousarray(part) for part in
            np.split(inputs[0], boundaries, axis=node.attrs["axis"])]


@kernel("Slice")
def slice_(node: Node, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    index = [slice(None)] * x.ndim
    attrs = node.attrs
    for start, end, axis, step in zip(attrs["starts"], attrs["ends"], attrs["axes"],
                                      attrs["steps"]):
        index[axis % x.ndim] = slice(start, end, step)
    return [np.ascontiguousarray(x[tuple(index)])]


def _pad_constant(node: Node, dtype: np.dtype):
    """The fill value as stored: the real ``value`` quantized with the input's parameters
    for a quantized integer tensor (its zero point when ``value`` is 0), else cast."""
    value, quant = node.attrs["value"], node.inputs[0].quant
    if np.issubdtype(dtype, np.integer) and quant is not None and quant.axis is None:
        info = np.iinfo(dtype)
        stored = np.rint(np.float32(value) / quant.scale[0]) + quant.zero_point[0]
        return np.clip(stored, info.min, info.max).astype(dtype)
    return np.asarray(value).astype(dtype)


@kernel("Pad")
def pad(node: Node, inputs: list) -> list[np.ndarray]:
    """Negative pads crop first; the remaining (non-negative) pads then pad."""
    x, pads = inputs[0], node.attrs["pads"]
    rank = x.ndim
    begins, ends = pads[:rank], pads[rank:]
    x = x[tuple(slice(-min(begin, 0), size + min(end, 0))
                for size, begin, end in zip(x.shape, begins, ends))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    mode = node.attrs["mode"]
    if mode == "constant":
        return [np.pad(x, widths, constant_values=_pad_constant(node, x.dtype))]
    return [np.pad(x, widths, mode="reflect" if mode == "reflect" else "edge")]


@kernel("DepthToSpace")
def depth_to_space(node: Node, inputs: list) -> list[np.ndarray]:
    """Computed in NHWC (an NCHW tensor is transposed there and back: the channel reading
    is the same in both layouts, only the channel axis moves)."""
    layout, block = node.attrs["layout"], node.attrs["blocksize"]
    x = to_nhwc(inputs[0], layout)
    n, h, w, c = x.shape
    depth = c // (block * block)
    if node.attrs["mode"] == "DCR":  # channel = (row_offset * block + column_offset) * depth + d
        y = x.reshape(n, h, w, block, block, depth).transpose(0, 1, 3, 2, 4, 5)
    else:  # CRD: channel = (d * block + row_offset) * block + column_offset
        y = x.reshape(n, h, w, depth, block, block).transpose(0, 1, 4, 2, 5, 3)
    y = y.reshape(n, h * block, w * block, depth)
    return [np.ascontiguousarray(from_nhwc(y, layout))]
