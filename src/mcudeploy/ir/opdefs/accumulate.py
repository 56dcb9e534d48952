"""An integer convolution in pieces: partial sums over input-channel groups, accumulated in
int32, then one requantization (the input-channel split of
:mod:`mcudeploy.passes.split_input_channels`).

For ``k`` groups ``c_g`` of a Conv's input channels::

    A_0 = ConvAccumulate(X, W[..., c_0], B)            (B: the int32 bias [O], or none)
    A_g = ConvAccumulate(X, W[..., c_g], A_{g-1})      (channel_begin = first channel of c_g)
    Y   = RequantizeAccumulator(A_{k-1})               = the unsplit Conv's int8 output

Quantized (what the split produces): int8 activations and weights, int32 accumulators. On
float tensors (the float reference) they mean the same sums of real numbers, and the
requantization is then only the fused clamp. No importer produces them.
"""
from __future__ import annotations

import math

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import ACTIVATION_ATTRS, need_rank, window_out

ACCUMULATE_ATTRS = {
    "layout": Attr("str", "NHWC", ("NHWC",)),
    "strides": Attr("ints", (1, 1)),
    "dilations": Attr("ints", (1, 1)),
    "pads": Attr("ints", (0, 0, 0, 0)),
    "channel_begin": Attr("int", 0),
}


def _accumulate_macc(node) -> int:
    """MACC = output elements x (channels of the slice) x kH x kW."""
    w = node.inputs[1]
    return math.prod(node.outputs[0].shape) * w.shape[1] * w.shape[2] * w.shape[3]


@op("ConvAccumulate", "conv", inputs=("X", "W", "A?"), attrs=ACCUMULATE_ATTRS, macc=_accumulate_macc)
def conv_accumulate(inputs, attrs):
    """A partial convolution over a slice of the input channels, added to an int32 accumulator.

    ``Y[n, y, x, o] = A + sum_{i, j, c < C_g} W[o, i, j, c] * (X[n, y*sH + i*dH - pad_top,
    x*sW + j*dW - pad_left, channel_begin + c] - zp_X)`` in int32 (two's complement, wrapping
    like the unsplit Conv's int32 accumulator), NHWC only, group 1. X int8 ``[N, H, W, C]``
    (the whole tensor: the slice ``[channel_begin, channel_begin + C_g)`` is read in place,
    not copied), W int8 ``[O, kH, kW, C_g]`` symmetric, A absent (0), int32 ``[O]`` (the bias)
    or int32 ``[N, OH, OW, O]`` (the previous group's accumulator; the output may be written
    over it in place). Out-of-range input positions read ``zp_X`` (they add 0). Y int32
    ``[N, OH, OW, O]``; its quantization (scale ``s_X s_W[o]`` along axis 3, zero point 0) is
    descriptive: :func:`requantize_accumulator` takes the scales from its attributes. On
    float32 X, W and A (no zero point) Y is float32, the same real-valued sum.
    """
    x, w = inputs[0], inputs[1]
    need_rank(x, 4, "ConvAccumulate input X")
    need_rank(w, 4, "ConvAccumulate weights W")
    begin, count = attrs["channel_begin"], w.shape[3]
    if begin < 0 or begin + count > x.shape[3]:
        raise ValueError(f"channels [{begin}, {begin + count}) of the weights {w.type_str()} are not inside "
                         f"the input's {x.shape[3]} channels")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilations"], attrs["pads"]
    oh = window_out(x.shape[1], w.shape[1], sh, dh, pt, pb)
    ow = window_out(x.shape[2], w.shape[2], sw, dw, pl, pr)
    shape = (x.shape[0], oh, ow, w.shape[0])
    dtype = x.dtype if x.dtype.is_float else DType.INT32
    accumulator = inputs[2] if len(inputs) > 2 else None
    if accumulator is not None:
        if accumulator.dtype != dtype or accumulator.shape not in ((w.shape[0],), shape):
            raise ValueError(f"accumulator A must be {dtype.value} [{w.shape[0]}] (a bias) or {dtype.value} "
                             f"{list(shape)}, got {accumulator.type_str()}")
    return [TensorType(dtype, shape)]


@op("RequantizeAccumulator", "quant", inputs=("A",), attrs={
    "input_scale": Attr("float", 1.0),
    "weight_scales": Attr("floats", (1.0,)),
    "to": Attr("str", "int8", ("int8",)),
    **ACTIVATION_ATTRS,
})
def requantize_accumulator(inputs, attrs):
    """The requantization of a Conv's int32 accumulator to int8, per output channel.

    ``Y[..., o] = clamp(mbqm(A[..., o], M[o], S[o]) + zp_Y, act_min, act_max)`` with
    ``M[o], S[o] = quantize_multiplier(double(input_scale) * double(weight_scales[o]) /
    double(s_Y))``: TFLite's per-channel Conv requantization exactly, so that a Conv equals
    this op applied to the sum of its :func:`conv_accumulate` pieces. ``input_scale`` is the
    Conv input's float32 scale, ``weight_scales`` the weights' float32 scales (one per output
    channel, or one for all), kept as attributes because the float32 product the accumulator's
    own quantization stores would round the multipliers differently. ``act_min`` / ``act_max``:
    the fused clamp (``activation_min`` / ``activation_max``) in Y's quantized domain. A int32
    ``[N, OH, OW, O]``, Y ``to`` (int8) of the same shape, quantized per tensor. On a float32 A
    (the float reference) ``Y = clamp(A, activation_min, activation_max)``, float32.
    """
    accumulator = inputs[0]
    need_rank(accumulator, 4, "RequantizeAccumulator input A")
    if accumulator.dtype.is_float:
        return [TensorType(accumulator.dtype, accumulator.shape)]
    if accumulator.dtype != DType.INT32:
        raise ValueError(f"accumulator A must be int32 (or float), got {accumulator.type_str()}")
    if len(attrs["weight_scales"]) not in (1, accumulator.shape[3]):
        raise ValueError(f"{len(attrs['weight_scales'])} weight scales for {accumulator.shape[3]} channels")
    return [TensorType(DType(attrs["to"]), accumulator.shape)]
