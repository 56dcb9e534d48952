"""Conv and ConvTranspose (both layouts), computed in NHWC with float64 accumulation.

Conv: ``Y[n, y, x, o] = B[o] + sum_{i, j, c in group(o)} Xpad[n, y*sH + i*dH, x*sW + j*dW, c]
* W[o, i, j, c]`` (weights brought to ``[O, kH, kW, C/group]``); grouped convolutions run one
im2col matrix product per group, depthwise ones (``C/group == 1``) one multiply-add per tap.

ConvTranspose scatters every input pixel: ``Full[n, y*sH + i*dH, x*sW + j*dW, o] +=
sum_c X[n, y, x, c] * W[c, i, j, o]`` (per group), then crops ``pads`` (top/left begin,
bottom/right end, with ``output_padding`` extending the end) and adds the bias.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import finish, from_nhwc, grouped_products, nhwc_shape, to_nhwc, wide, windows
from .registry import kernel


def _pad_hw(x: np.ndarray, pads: tuple[int, ...]) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))


def _depthwise(windows_view: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Depthwise conv: ``weights`` ``[O = C*multiplier, kH, kW, 1]``; output channel
    ``c*multiplier + m`` reads input channel ``c``."""
    n, oh, ow, kh, kw, channels = windows_view.shape
    multiplier = weights.shape[0] // channels
    taps = weights[..., 0].reshape(channels, multiplier, kh, kw)
    out = np.zeros((n, oh, ow, channels, multiplier))
    for i in range(kh):
        for j in range(kw):
            out += windows_view[:, :, :, i, j, :, None] * taps[:, :, i, j]
    return out.reshape(n, oh, ow, channels * multiplier)


def conv2d_nhwc(x: np.ndarray, weights: np.ndarray, *, strides, dilations, pads, group: int,
                out_hw: tuple[int, ...]) -> np.ndarray:
    """Float64 NHWC convolution without bias; ``weights`` ``[O, kH, kW, C/group]``."""
    padded = _pad_hw(x, pads)
    view = windows(padded, out_hw, weights.shape[1:3], strides, dilations)
    if weights.shape[3] == 1 and group == x.shape[3] and group > 1:
        return _depthwise(view, weights)
    return grouped_products(view, weights, group, np.result_type(view, weights))


@kernel("Conv")
def conv(node: Node, inputs: list) -> list[np.ndarray]:
    x, weights, bias = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
    layout, attrs = node.attrs["layout"], node.attrs
    if layout == "NCHW":
        weights = weights.transpose(0, 2, 3, 1)
    out_shape = nhwc_shape(node.outputs[0].shape, layout)
    y = conv2d_nhwc(wide(to_nhwc(x, layout)), wide(weights), strides=attrs["strides"],
                    dilations=attrs["dilations"], pads=attrs["pads"], group=attrs["group"],
                    out_hw=out_shape[1:3])
    if bias is not None:
        y = y + wide(bias)
    return finish(from_nhwc(y, layout), node)


def _transpose_taps(weights: np.ndarray, layout: str, group: int) -> np.ndarray:
    """ConvTranspose weights as ``[kH, kW, group, C/group, O/group]``."""
    if layout == "NCHW":  # [C, O/g, kH, kW]
        channels, per_group_out, kh, kw = weights.shape
        w = weights.reshape(group, channels // group, per_group_out, kh, kw)
        return w.transpose(3, 4, 0, 1, 2)
    out_channels, kh, kw, per_group_in = weights.shape  # [O, kH, kW, C/g]
    w = weights.reshape(group, out_channels // group, kh, kw, per_group_in)
    return w.transpose(2, 3, 0, 4, 1)


@kernel("ConvTranspose")
def conv_transpose(node: Node, inputs: list) -> list[np.ndarray]:
    x, weights, bias = inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None
    layout, group = node.attrs["layout"], node.attrs["group"]
    (sh, sw), (dh, dw) = node.attrs["strides"], node.attrs["dilations"]
    top, left, _, _ = node.attrs["pads"]
    x = wide(to_nhwc(x, layout))
    taps = wide(_transpose_taps(weights, layout, group))
    kh, kw, _, per_group_in, per_group_out = taps.shape
    n, h, w, _ = x.shape
    out_shape = nhwc_shape(node.outputs[0].shape, layout)
    full_h = max((h - 1) * sh + (kh - 1) * dh + 1, top + out_shape[1])
    full_w = max((w - 1) * sw + (kw - 1) * dw + 1, left + out_shape[2])
    full = np.zeros((n, full_h, full_w, group, per_group_out))
    grouped = x.reshape(n, h, w, group, per_group_in)
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (h - 1) * sh + 1, sh)
            columns = slice(j * dw, j * dw + (w - 1) * sw + 1, sw)
            full[:, rows, columns] += np.einsum("nhwgc,gco->nhwgo", grouped, taps[i, j])
    y = full.reshape(n, full_h, full_w, group * per_group_out)
    y = y[:, top:top + out_shape[1], left:left + out_shape[2]]
    if bias is not None:
        y = y + wide(bias)
    return finish(from_nhwc(y, layout), node)
