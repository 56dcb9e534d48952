"""CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV -> IR Conv / ConvTranspose (NHWC).

* CONV_2D: weights ``[O, kH, kW, C/g]`` are already the IR NHWC layout;
  ``group = C / weight_C`` (grouped convolution when the weights have fewer channels).
* DEPTHWISE_CONV_2D: weights ``[1, kH, kW, C*M]`` are transposed to ``[C*M, kH, kW, 1]``
  (``W'[o, i, j, 0] = W[0, i, j, o]``) and ``group = C``; a per-channel quantization axis 3
  becomes axis 0 (same scales, same order).
* TRANSPOSE_CONV: inputs ``(output_shape, weights [O, kH, kW, I], input, bias?)``. TFLite
  computes its padding as for the forward convolution that maps the output back to the
  input: ``pad_before = total // 2`` with ``total`` from the SAME / VALID rule applied to the
  *output* size; the full transposed result ``(in - 1) * stride + k`` is then cropped to the
  output size, so ``pad_after = full - out - pad_before`` (a negative remainder becomes
  ``output_padding``).
"""
from __future__ import annotations

import numpy as np

from ..common import converter, dilations_of, fused_activation, spatial_pads, strides_of
from ..context import ConversionContext
from ..schema_tables import Padding


def _check_rank4(ctx: ConversionContext, x, w) -> None:
    for what, value in (("input", x), ("weights", w)):
        if value.rank != 4:
            raise ctx.unsupported(f"{what} {value.type_str()} must be rank 4")


@converter("CONV_2D")
def conv_2d(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    w = ctx.require_input(1, "weights")
    _check_rank4(ctx, x, w)
    channels, weight_channels = x.shape[3], w.shape[3]
    if weight_channels <= 0 or channels % weight_channels:
        raise ctx.unsupported(f"input has {channels} channels, not a multiple of the weights' "
                              f"{weight_channels}")
    strides, dilations = strides_of(ctx), dilations_of(ctx)
    pads = spatial_pads(ctx, x.shape[1:3], w.shape[1:3], strides, dilations)
    ctx.add_node("Conv", [x, w, ctx.input(2)],
                 {"layout": "NHWC", "strides": strides, "dilations": dilations, "pads": pads,
                  "group": channels // weight_channels, **fused_activation(ctx)})


def _depthwise_weights(array: np.ndarray) -> np.ndarray:
    """``[1, kH, kW, C*M] -> [C*M, kH, kW, 1]``."""
    return array.transpose(3, 1, 2, 0)


@converter("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    w = ctx.weights(1, _depthwise_weights, axis_map={3: 0}, tag="depthwise")
    _check_rank4(ctx, x, w)
    channels, outputs = x.shape[3], w.shape[0]
    if outputs % channels:
        raise ctx.unsupported(f"weights give {outputs} output channels, not a multiple of the "
                              f"input's {channels}")
    strides, dilations = strides_of(ctx), dilations_of(ctx)
    pads = spatial_pads(ctx, x.shape[1:3], w.shape[1:3], strides, dilations)
    ctx.add_node("Conv", [x, w, ctx.input(2)],
                 {"layout": "NHWC", "strides": strides, "dilations": dilations, "pads": pads,
                  "group": channels, **fused_activation(ctx)})


def _transpose_conv_output_hw(ctx: ConversionContext, x, w, strides) -> tuple[int, ...]:
    """Output height / width: the stored output shape (or, with changed input shapes, the
    output_shape constant, else what SAME / VALID give)."""
    if not ctx.infer_shapes:
        return tuple(ctx.stored_shape()[1:3])
    tensor = ctx.tensor(0)
    if tensor is not None and tensor.index not in ctx.values and ctx.is_constant(tensor):
        return tuple(ctx.constant_ints(0, "output shape")[1:3])
    same = int(ctx.options.get("padding", Padding.SAME)) == Padding.SAME
    return tuple(x.shape[1 + a] * strides[a] if same else (x.shape[1 + a] - 1) * strides[a]
                 + w.shape[1 + a] for a in range(2))


@converter("TRANSPOSE_CONV")
def transpose_conv(ctx: ConversionContext) -> None:
    w, x = ctx.require_input(1, "weights"), ctx.require_input(2, "input")
    _check_rank4(ctx, x, w)
    strides = strides_of(ctx)
    kernel = w.shape[1:3]
    out_hw = _transpose_conv_output_hw(ctx, x, w, strides)
    same = int(ctx.options.get("padding", Padding.SAME)) == Padding.SAME
    for axis in range(2):  # TFLite's own check: the forward conv of the output gives the input
        span = out_hw[axis] if same else out_hw[axis] - kernel[axis] + 1
        if -(-span // strides[axis]) != x.shape[1 + axis]:
            raise ctx.unsupported(f"output size {list(out_hw)} does not match input "
                                  f"{x.type_str()} for kernel {list(kernel)}, strides "
                                  f"{list(strides)} and {'SAME' if same else 'VALID'} padding")
    before = spatial_pads(ctx, out_hw, kernel, strides)[:2]
    pads, output_padding = list(before) + [0, 0], [0, 0]
    for axis in range(2):
        full = (x.shape[1 + axis] - 1) * strides[axis] + kernel[axis]
        after = full - out_hw[axis] - before[axis]
        pads[2 + axis], output_padding[axis] = max(after, 0), max(-after, 0)
    if w.shape[3] <= 0 or x.shape[3] % w.shape[3]:
        raise ctx.unsupported(f"input has {x.shape[3]} channels, weights {w.type_str()} expect "
                              f"a multiple of {w.shape[3]}")
    ctx.add_node("ConvTranspose", [x, w, ctx.input(3)],
                 {"layout": "NHWC", "strides": strides, "pads": pads,
                  "output_padding": output_padding, "group": x.shape[3] // w.shape[3],
                  **fused_activation(ctx)})
