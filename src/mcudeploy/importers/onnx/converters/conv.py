"""Conv and ConvTranspose -> IR ``Conv`` / ``ConvTranspose`` (NCHW, explicit pads).

ConvTranspose with ``output_shape`` (or SAME auto_pad, whose output is ``in * stride``):
``total = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out`` is split as the
ONNX spec and onnxruntime do: SAME_UPPER puts ``floor(total / 2)`` at the beginning,
otherwise (SAME_LOWER, or output_shape alone) ``ceil(total / 2)``. A negative total (output larger than the kernel can reach) becomes
extra ``output_padding``.
"""
from __future__ import annotations

import onnx

from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW, Window, emit_spatial, lift_input, resolve_window, spatial_rank


def _read(ctx: ConversionContext, node: onnx.NodeProto):
    """Attributes, spatial rank, input spatial sizes, kernel and (lifted) X, W, B of a conv."""
    attrs = ctx.attributes(node)
    x = ctx.required_input(node, 0)
    rank = spatial_rank(ctx, node, x)
    kernel = ctx.shape_of(node.input[1])[2:]
    inputs = [lift_input(ctx, node, 0, rank), lift_input(ctx, node, 1, rank), ctx.input(node, 2)]
    return attrs, rank, x.shape[2:], kernel, inputs


@converter("Conv")
def convert_conv(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs, rank, sizes, kernel, inputs = _read(ctx, node)
    window = resolve_window(ctx, node, attrs, sizes, kernel).lifted()
    ir_attrs = {"strides": window.strides, "dilations": window.dilations, "pads": window.pads,
                "group": attrs.get("group", 1), "layout": NCHW}
    emit_spatial(ctx, node, "Conv", inputs, ir_attrs, rank)


def _transpose_pads(attrs: dict, sizes, kernel, strides, dilations, output_padding):
    """Explicit pads and output_padding of a ConvTranspose with output_shape / SAME."""
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    rank = len(sizes)
    if "output_shape" in attrs:
        targets = list(attrs["output_shape"])[-rank:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        targets = [size * stride for size, stride in zip(sizes, strides)]
    else:
        pads = (0,) * (2 * rank) if auto_pad == "VALID" else tuple(attrs.get("pads") or (0,) * 2 * rank)
        return pads, tuple(output_padding)
    begins, ends, extra = [], [], []
    for size, k, stride, dilation, adjust, target in zip(sizes, kernel, strides, dilations,
                                                         output_padding, targets):
        total = stride * (size - 1) + adjust + (k - 1) * dilation + 1 - target
        grow = max(0, -total)
        total = max(0, total)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
        extra.append(adjust + grow)
    return tuple(begins + ends), tuple(extra)


@converter("ConvTranspose")
def convert_conv_transpose(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs, rank, sizes, kernel, inputs = _read(ctx, node)
    window = resolve_window(ctx, node, {**attrs, "auto_pad": "NOTSET"}, sizes, kernel)
    output_padding = tuple(attrs.get("output_padding") or (0,) * rank)
    pads, output_padding = _transpose_pads(attrs, sizes, kernel, window.strides,
                                           window.dilations, output_padding)
    window = Window(window.kernel, window.strides, window.dilations, pads).lifted()
    if rank == 1:
        output_padding = (0, *output_padding)
    ir_attrs = {"strides": window.strides, "dilations": window.dilations, "pads": window.pads,
                "group": attrs.get("group", 1), "output_padding": output_padding,
                "layout": NCHW}
    emit_spatial(ctx, node, "ConvTranspose", inputs, ir_attrs, rank)
