"""A float32 Conv for the calibration forward pass (:mod:`.forward`): the same formula as the
reference kernel (:mod:`mcudeploy.reference.float_kernels.conv`),

    Y[n, y, x, o] = B[o] + sum_{i, j, c} Xpad[n, y*sH + i*dH, x*sW + j*dW, c] * W[o, i, j, c]

then the fused clamp, but accumulated in float32 by one BLAS matrix product per block of
output rows (im2col, ``[rows * OW, kH * kW * C] @ [kH * kW * C, O]``, the block sized to
``BLOCK_BYTES`` of columns; a 1x1 stride-1 conv needs no columns at all; a stride-1 conv
with fewer output than input channels multiplies every input pixel by every tap and adds
the shifted partial sums instead, which moves fewer values), as TFLite's and
onnxruntime's calibrators compute in float32. The reference accumulates in float64 and
rounds once; float32 accumulation differs from it by a few float32 ulps per output (about
1e-6 relative), which moves an observed range by as much. Grouped and depthwise
convolutions use the reference kernel (:func:`supports` says which).
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from ..reference.float_kernels._common import clamp, from_nhwc, nhwc_shape, to_nhwc

BLOCK_BYTES = 32 << 20


def supports(node: Node, inputs: list) -> bool:
    """Whether :func:`conv_float32` computes ``node`` (ungrouped 2-D Conv of float32 data
    with constant weights)."""
    return (node.op == "Conv" and node.attrs["group"] == 1 and inputs[0].dtype == np.float32
            and inputs[0].ndim == 4 and node.inputs[1].const is not None)


def _columns(padded: np.ndarray, rows: range, out_width: int, kernel, strides, dilations,
             buffer: np.ndarray) -> np.ndarray:
    """The im2col block of output rows ``rows``: ``[len(rows) * OW, kH * kW * C]``."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    count, channels = len(rows), padded.shape[2]
    block = buffer[:count * out_width * kh * kw * channels].reshape(count, out_width, kh, kw, channels)
    for i in range(kh):
        top = rows.start * sh + i * dh
        for j in range(kw):
            block[:, :, i, j, :] = padded[top:top + (count - 1) * sh + 1:sh,
                                          j * dw:j * dw + (out_width - 1) * sw + 1:sw, :]
    return block.reshape(count * out_width, kh * kw * channels)


def _output_side(x: np.ndarray, weights: np.ndarray, node: Node, out_hw: tuple[int, ...]) -> np.ndarray:
    """Stride 1: every input pixel times every tap first, ``P = X [H*W, C] @ [C, kH*kW*O]``,
    then ``Y[y, x] = sum_{i, j} P[y + i*dH - top, x + j*dW - left, i, j]`` (inside the
    input), block of output rows by block of output rows."""
    out_count, kh, kw, channels = weights.shape
    (dh, dw), (top, left, _, _) = node.attrs["dilations"], node.attrs["pads"]
    height, width = x.shape[:2]
    out_height, out_width = out_hw
    matrix = np.ascontiguousarray(weights.transpose(3, 1, 2, 0)).reshape(channels, -1)
    per_block = max(1, min(out_height, BLOCK_BYTES // max(width * matrix.shape[1] * 4, 1)))
    out = np.zeros((out_height, out_width, out_count), np.float32)
    for start in range(0, out_height, per_block):
        stop = min(out_height, start + per_block)
        first, last = max(0, start - top), min(height, stop - top + (kh - 1) * dh)
        if first >= last:
            continue
        partial = (x[first:last].reshape(-1, channels) @ matrix).reshape(last - first, width, kh, kw, out_count)
        for i in range(kh):
            rows = (max(start, first + top - i * dh), min(stop, last + top - i * dh))
            for j in range(kw):
                columns = (max(0, left - j * dw), min(out_width, width + left - j * dw))
                if rows[0] < rows[1] and columns[0] < columns[1]:
                    out[rows[0]:rows[1], columns[0]:columns[1]] += partial[
                        rows[0] + i * dh - top - first:rows[1] + i * dh - top - first,
                        columns[0] + j * dw - left:columns[1] + j * dw - left, i, j]
    return out


def _conv_one(x: np.ndarray, weights: np.ndarray, node: Node, out_hw: tuple[int, ...]) -> np.ndarray:
    """One NHWC sample ``[H, W, C]`` -> ``[OH, OW, O]`` without bias; weights ``[O, kH, kW, C]``.
    im2col copies ``kH*kW*C`` values per output pixel, the output-side form (stride 1 only)
    writes ``kH*kW*O`` partial sums per input pixel: the one that moves fewer is used."""
    attrs = node.attrs
    out_height, out_width = out_hw
    kernel, strides, dilations = weights.shape[1:3], attrs["strides"], attrs["dilations"]
    matrix = weights.reshape(weights.shape[0], -1).T            # [kH * kW * C, O]
    if kernel == (1, 1) and tuple(strides) == (1, 1) and not any(attrs["pads"]):
        return (x.reshape(-1, x.shape[2]) @ matrix).reshape(out_height, out_width, -1)
    if tuple(strides) == (1, 1) and weights.shape[0] < weights.shape[3]:
        return _output_side(x, weights, node, out_hw)
    top, left, bottom, right = attrs["pads"]
    padded = np.pad(x, ((top, bottom), (left, right), (0, 0)))
    row_bytes = out_width * matrix.shape[0] * 4
    per_block = max(1, min(out_height, BLOCK_BYTES // max(row_bytes, 1)))
    buffer = np.empty(per_block * out_width * matrix.shape[0], np.float32)
    out = np.empty((out_height, out_width, matrix.shape[1]), np.float32)
    for start in range(0, out_height, per_block):
        rows = range(start, min(out_height, start + per_block))
        columns = _columns(padded, rows, out_width, kernel, strides, dilations, buffer)
        out[rows.start:rows.stop] = (columns @ matrix).reshape(len(rows), out_width, -1)
    return out


def conv_float32(node: Node, inputs: list) -> list[np.ndarray]:
    """The Conv ``node`` on ``inputs`` in float32 (module docstring)."""
    x, weights, bias = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
    layout = node.attrs["layout"]
    if layout == "NCHW":
        weights = weights.transpose(0, 2, 3, 1)
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    out_shape = nhwc_shape(node.outputs[0].shape, layout)
    samples = to_nhwc(x, layout)
    y = np.stack([_conv_one(np.ascontiguousarray(sample), weights, node, out_shape[1:3]) for sample in samples])
    if bias is not None:
        y += np.asarray(bias, np.float32).reshape(-1)
    return [clamp(from_nhwc(y, layout), node).astype(np.float32, copy=False)]
