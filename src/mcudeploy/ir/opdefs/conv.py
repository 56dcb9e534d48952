"""Convolutions.

Layouts (the op's ``layout`` attribute; the weight layout follows from it):

========  ====================  ==============================  =========================
op        activation layout     weights                         source it mirrors
========  ====================  ==============================  =========================
Conv      NCHW                  ``[O, C/group, kH, kW]``        ONNX
Conv      NHWC                  ``[O, kH, kW, C/group]``        TFLite CONV_2D (depthwise
                                                                is ``group == C``)
ConvT     NCHW                  ``[C, O/group, kH, kW]``        ONNX ConvTranspose
ConvT     NHWC                  ``[O, kH, kW, C/group]``        TFLite TRANSPOSE_CONV
========  ====================  ==============================  =========================

``pads`` is ``(top, left, bottom, right)`` = ONNX's ``(H_begin, W_begin, H_end, W_end)``;
importers turn SAME / VALID / auto_pad into explicit pads.
"""
from __future__ import annotations

import math

from ..registry import Attr, TensorType, op
from ._common import ACTIVATION_ATTRS, LAYOUT_ATTR, channel_axis, need_rank, spatial_axes, window_out

CONV_ATTRS = {
    "layout": LAYOUT_ATTR,
    "strides": Attr("ints", (1, 1)),
    "dilations": Attr("ints", (1, 1)),
    "pads": Attr("ints", (0, 0, 0, 0)),
    "group": Attr("int", 1),
    **ACTIVATION_ATTRS,
}


def _kernel_hw(weights, layout: str) -> tuple[int, int]:
    return tuple(weights.shape[2:4]) if layout == "NCHW" else tuple(weights.shape[1:3])


def _conv_macc(node) -> int:
    """MACC = output elements x (C / group) x kH x kW (bias adds not counted)."""
    x, w = node.inputs[0], node.inputs[1]
    layout, group = node.attrs["layout"], node.attrs["group"]
    kh, kw = _kernel_hw(w, layout)
    in_channels = x.shape[channel_axis(layout)]
    return math.prod(node.outputs[0].shape) * (in_channels // group) * kh * kw


@op("Conv", "conv", inputs=("X", "W", "B?"), attrs=CONV_ATTRS, macc=_conv_macc)
def conv(inputs, attrs):
    """2-D convolution (grouped, depthwise, dilated), optional bias, optional fused clamp.

    ``Y[n, o, y, x] = B[o] + sum_{c in group(o), i, j} X[n, c, y*sH + i*dH - pad_top,
    x*sW + j*dW - pad_left] * W[o, c, i, j]`` (written in NCHW; NHWC is the same on
    transposed indices). Out-of-range input positions read 0 (the zero point when quantized).
    """
    x, w = inputs[0], inputs[1]
    need_rank(x, 4, "Conv input X")
    need_rank(w, 4, "Conv weights W")
    layout, group = attrs["layout"], attrs["group"]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilations"], attrs["pads"]
    kh, kw = _kernel_hw(w, layout)
    in_channels = x.shape[channel_axis(layout)]
    w_in = w.shape[1] if layout == "NCHW" else w.shape[3]
    out_channels = w.shape[0]
    if in_channels % group or out_channels % group or w_in * group != in_channels:
        raise ValueError(f"input has {in_channels} channels, weights {w.type_str()} with group "
                         f"{group} expect {w_in * group}")
    if len(inputs) > 2 and inputs[2] is not None and inputs[2].shape != (out_channels,):
        raise ValueError(f"bias must be [{out_channels}], got {inputs[2].type_str()}")
    ah, aw = spatial_axes(layout)
    oh = window_out(x.shape[ah], kh, sh, dh, pt, pb)
    ow = window_out(x.shape[aw], kw, sw, dw, pl, pr)
    n = x.shape[0]
    shape = (n, out_channels, oh, ow) if layout == "NCHW" else (n, oh, ow, out_channels)
    return [TensorType(x.dtype, shape)]


def _conv_transpose_macc(node) -> int:
    """MACC = input elements x kH x kW x (O / group): every input pixel scatters a kernel."""
    x, w = node.inputs[0], node.inputs[1]
    layout, group = node.attrs["layout"], node.attrs["group"]
    kh, kw = _kernel_hw(w, layout)
    out_channels = node.outputs[0].shape[channel_axis(layout)]
    return math.prod(x.shape) * kh * kw * (out_channels // group)


@op("ConvTranspose", "conv", inputs=("X", "W", "B?"), macc=_conv_transpose_macc,
    attrs={**CONV_ATTRS, "output_padding": Attr("ints", (0, 0))})
def conv_transpose(inputs, attrs):
    """Transposed 2-D convolution (ONNX ConvTranspose / TFLite TRANSPOSE_CONV).

    Output size per spatial axis: ``(in - 1) * stride + (k - 1) * dilation + 1
    - pad_begin - pad_end + output_padding``.
    """
    x, w = inputs[0], inputs[1]
    need_rank(x, 4, "ConvTranspose input X")
    need_rank(w, 4, "ConvTranspose weights W")
    layout, group = attrs["layout"], attrs["group"]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilations"], attrs["pads"]
    oph, opw = attrs["output_padding"]
    kh, kw = _kernel_hw(w, layout)
    in_channels = x.shape[channel_axis(layout)]
    if layout == "NCHW":
        w_in, out_channels = w.shape[0], w.shape[1] * group
        if w_in != in_channels:
            raise ValueError(f"input has {in_channels} channels, weights {w.type_str()} expect {w_in}")
    else:
        out_channels, w_in = w.shape[0], w.shape[3]
        if w_in * group != in_channels:
            raise ValueError(f"input has {in_channels} channels, weights {w.type_str()} with group "
                             f"{group} expect {w_in * group}")
    ah, aw = spatial_axes(layout)
    oh = (x.shape[ah] - 1) * sh + (kh - 1) * dh + 1 - pt - pb + oph
    ow = (x.shape[aw] - 1) * sw + (kw - 1) * dw + 1 - pl - pr + opw
    if oh <= 0 or ow <= 0:
        raise ValueError(f"output would be {oh}x{ow}: pads {attrs['pads']} are too large")
    n = x.shape[0]
    shape = (n, out_channels, oh, ow) if layout == "NCHW" else (n, oh, ow, out_channels)
    return [TensorType(x.dtype, shape)]
