"""MaxPool, AveragePool, GlobalAveragePool and ReduceMean.

Windows are strided views of the NHWC input padded by ``pads`` plus, in ``ceil_mode``,
enough extra end rows / columns for the last window. MaxPool pads with ``-inf`` (the
dtype's minimum for integers), so padding never wins. AveragePool sums in float64 and
divides by the number of window taps that fall inside the input, or, with
``count_include_pad``, inside the input plus its explicit pads (never the ceil-mode
extra, as onnxruntime): the divisor is the same window sum applied to a 0/1 mask.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import finish, from_nhwc, nhwc_shape, output_dtype, to_nhwc, wide, windows
from .registry import kernel


def _padding(size: int, out: int, kernel_size: int, stride: int, dilation: int,
             begin: int, end: int) -> tuple[int, int, int]:
    """``(begin, end, extra)``: explicit pads and the ceil-mode extra at the end."""
    needed = (out - 1) * stride + (kernel_size - 1) * dilation + 1
    return begin, end, max(0, needed - (size + begin + end))


def _widths(pads: list) -> tuple:
    """``np.pad`` widths of an NHWC tensor from the per-axis ``(begin, end, extra)``."""
    (top, bottom, extra_h), (left, right, extra_w) = pads
    return ((0, 0), (top, bottom + extra_h), (left, right + extra_w), (0, 0))


def _pool_windows(x: np.ndarray, node: Node, fill: float) -> tuple[np.ndarray, list]:
    """NHWC windows view of ``x`` (already NHWC) padded with ``fill``; also the per-axis padding."""
    attrs = node.attrs
    out = nhwc_shape(node.outputs[0].shape, attrs["layout"])
    top, left, bottom, right = attrs["pads"]
    pads = [_padding(x.shape[1], out[1], attrs["kernel_shape"][0], attrs["strides"][0],
                     attrs["dilations"][0], top, bottom),
            _padding(x.shape[2], out[2], attrs["kernel_shape"][1], attrs["strides"][1],
                     attrs["dilations"][1], left, right)]
    padded = np.pad(x, _widths(pads), constant_values=fill)
    view = windows(padded, out[1:3], attrs["kernel_shape"], attrs["strides"], attrs["dilations"])
    return view, pads


@kernel("MaxPool")
def max_pool(node: Node, inputs: list) -> list[np.ndarray]:
    x = to_nhwc(inputs[0], node.attrs["layout"])
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    view, _ = _pool_windows(x, node, fill)
    return finish(from_nhwc(view.max(axis=(3, 4)), node.attrs["layout"]), node)


def _tap_counts(node: Node, height: int, width: int, pads: list) -> np.ndarray:
    """Number of counted taps per output position, ``[1, OH, OW, 1]``."""
    (top, bottom, _), (left, right, _) = pads
    mask = np.ones((1, height, width, 1))
    if node.attrs["count_include_pad"]:
        mask = np.pad(mask, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=1.0)
        pads = [(0, 0, pads[0][2]), (0, 0, pads[1][2])]
    mask = np.pad(mask, _widths(pads))
    out = nhwc_shape(node.outputs[0].shape, node.attrs["layout"])
    view = windows(mask, out[1:3], node.attrs["kernel_shape"], node.attrs["strides"],
                   node.attrs["dilations"])
    return view.sum(axis=(3, 4))


@kernel("AveragePool")
def average_pool(node: Node, inputs: list) -> list[np.ndarray]:
    x = wide(to_nhwc(inputs[0], node.attrs["layout"])).astype(np.float64)
    view, pads = _pool_windows(x, node, 0.0)
    counts = _tap_counts(node, x.shape[1], x.shape[2], pads)
    y = view.sum(axis=(3, 4)) / np.maximum(counts, 1.0)
    if not np.issubdtype(output_dtype(node), np.floating):
        y = np.rint(y)
    return finish(from_nhwc(y, node.attrs["layout"]), node)


@kernel("GlobalAveragePool")
def global_average_pool(node: Node, inputs: list) -> list[np.ndarray]:
    axes = (2, 3) if node.attrs["layout"] == "NCHW" else (1, 2)
    return [wide(inputs[0]).mean(axis=axes, keepdims=True).astype(output_dtype(node))]


@kernel("ReduceMean")
def reduce_mean(node: Node, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    axes = tuple(sorted({a % x.ndim for a in node.attrs["axes"]})) if x.ndim else ()
    y = wide(x).mean(axis=axes, keepdims=bool(node.attrs["keepdims"]))
    return [np.asarray(y).astype(output_dtype(node))]
