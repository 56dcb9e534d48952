"""Conv2D, DepthwiseConv2D, SeparableConv2D -> IR Conv (NHWC); Conv2DTranspose -> IR
ConvTranspose (NHWC); then the layer's activation.

Weights (Keras ``kernel`` layouts -> IR NHWC ``[O, kH, kW, C/group]``):

* Conv2D ``[kH, kW, C/g, O]``: ``W'[o, i, j, c] = W[i, j, c, o]``; ``group = groups``.
* DepthwiseConv2D ``[kH, kW, C, M]`` (depth multiplier M): output channel ``c*M + m``;
  ``W'[c*M + m, i, j, 0] = W[i, j, c, m]``; ``group = C``.
* SeparableConv2D: the depthwise Conv (no bias, node ``<layer>/depthwise``), then the
  pointwise ``[1, 1, C*M, O]`` Conv with the bias (node ``<layer>``).

* Conv2DTranspose ``[kH, kW, O, C]``: ``W'[o, i, j, c] = W[i, j, o, c]``. Output size
  ``in * s`` (same) or ``(in - 1) * s + k`` (valid). TensorFlow's padding is the one of the
  forward convolution from the output back to the input: ``before = total // 2`` with
  ``total = max((in - 1) * s + k - out, 0)``; the full result ``(in - 1) * s + k`` is cropped
  to the output, ``after = full - out - before`` (a negative one, when k < s, is
  ``output_padding``).

A ReLU / ReLU6 activation is the fused clamp of the (last) Conv.
"""
from __future__ import annotations

import numpy as np

from ....ir import Value
from ..context import LayerContext
from ..registry import apply_activation, converter, fused_clamp
from .spatial import pair, spatial_pads


def _conv(ctx: LayerContext, x: Value, kernel_hwio: np.ndarray, bias: np.ndarray | None,
          group: int, *, suffix: str = "", clamp: bool = True, pointwise: bool = False) -> Value:
    """The Conv of ``kernel_hwio`` (Keras HWIO); ``pointwise``: a 1x1 Conv of stride 1."""
    strides, dilations = pair(ctx, "strides", 1), pair(ctx, "dilation_rate", 1)
    if pointwise:
        strides, dilations = (1, 1), (1, 1)
    prefix = f"{suffix}_" if suffix else ""
    weights = ctx.constant(kernel_hwio.transpose(3, 0, 1, 2), f"{prefix}kernel")
    bias_value = ctx.constant(bias, f"{prefix}bias") if bias is not None else None
    kernel = kernel_hwio.shape[:2]
    pads = (0, 0, 0, 0) if pointwise else spatial_pads(ctx, x.shape[1:3], kernel, strides, dilations)
    attrs = {"layout": "NHWC", "strides": strides, "dilations": dilations, "pads": pads,
             "group": group, **(fused_clamp(ctx) if clamp else {})}
    return ctx.add("Conv", [x, weights, bias_value], attrs, suffix=suffix)


def _kernel_and_bias(ctx: LayerContext, kernels: int) -> tuple[list[np.ndarray], np.ndarray | None]:
    use_bias = bool(ctx.option("use_bias", True))
    arrays = ctx.weights(kernels + int(use_bias))
    if any(a.ndim != 4 for a in arrays[:kernels]):
        raise ctx.unsupported(f"kernel shapes {[list(a.shape) for a in arrays[:kernels]]} are not rank 4")
    return arrays[:kernels], (arrays[kernels] if use_bias else None)


@converter("Conv2D", "Convolution2D")
def conv2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    (kernel,), bias = _kernel_and_bias(ctx, 1)
    groups = int(ctx.option("groups", 1) or 1)
    if kernel.shape[2] * groups != x.shape[3]:
        raise ctx.unsupported(f"kernel {list(kernel.shape)} with groups {groups} expects "
                              f"{kernel.shape[2] * groups} input channels, the input has {x.shape[3]}")
    return [apply_activation(ctx, _conv(ctx, x, kernel, bias, groups))]


def depthwise_as_grouped(kernel: np.ndarray) -> np.ndarray:
    """``[kH, kW, C, M] -> [kH, kW, 1, C*M]`` (HWIO of a group-C Conv)."""
    kh, kw, channels, multiplier = kernel.shape
    return kernel.reshape(kh, kw, 1, channels * multiplier)


@converter("DepthwiseConv2D")
def depthwise_conv2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    (kernel,), bias = _kernel_and_bias(ctx, 1)
    if kernel.shape[2] != x.shape[3]:
        raise ctx.unsupported(f"depthwise kernel {list(kernel.shape)} does not match the "
                              f"input's {x.shape[3]} channels")
    y = _conv(ctx, x, depthwise_as_grouped(kernel), bias, x.shape[3])
    return [apply_activation(ctx, y)]


@converter("SeparableConv2D", "SeparableConvolution2D")
def separable_conv2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    (depthwise, pointwise), bias = _kernel_and_bias(ctx, 2)
    if depthwise.shape[2] != x.shape[3] or pointwise.shape[:3] != (1, 1, depthwise.shape[2] * depthwise.shape[3]):
        raise ctx.unsupported(f"kernels {list(depthwise.shape)} and {list(pointwise.shape)} do "
                              f"not match the input's {x.shape[3]} channels")
    middle = _conv(ctx, x, depthwise_as_grouped(depthwise), None, x.shape[3], suffix="depthwise",
                   clamp=False)
    y = _conv(ctx, middle, pointwise, bias, 1, pointwise=True)
    return [apply_activation(ctx, y)]


def _transpose_pads(in_size: int, kernel: int, stride: int, same: bool) -> tuple[int, int, int]:
    """``(out, pad_before, pad_after)`` of one axis; a negative ``pad_after`` is output padding."""
    full = (in_size - 1) * stride + kernel
    if not same:
        return full, 0, 0
    out = in_size * stride
    before = max(full - out, 0) // 2
    return out, before, full - out - before


@converter("Conv2DTranspose", "Convolution2DTranspose")
def conv2d_transpose(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    (kernel,), bias = _kernel_and_bias(ctx, 1)
    if ctx.option("output_padding") is not None or pair(ctx, "dilation_rate", 1) != (1, 1):
        raise ctx.unsupported("output_padding and dilation_rate are not supported; use the defaults")
    if kernel.shape[3] != x.shape[3]:
        raise ctx.unsupported(f"kernel {list(kernel.shape)} does not match the input's {x.shape[3]} channels")
    strides = pair(ctx, "strides", 1)
    same = str(ctx.option("padding", "valid")).lower() == "same"
    axes = [_transpose_pads(x.shape[1 + a], kernel.shape[a], strides[a], same) for a in range(2)]
    weights = ctx.constant(kernel.transpose(2, 0, 1, 3), "kernel")
    bias_value = ctx.constant(bias, "bias") if bias is not None else None
    attrs = {"layout": "NHWC", "strides": strides, "group": 1,
             "pads": (axes[0][1], axes[1][1], max(axes[0][2], 0), max(axes[1][2], 0)),
             "output_padding": (max(-axes[0][2], 0), max(-axes[1][2], 0)), **fused_clamp(ctx)}
    y = ctx.add("ConvTranspose", [x, weights, bias_value], attrs)
    return [apply_activation(ctx, y)]
