"""Normalisations: BatchNormalization (inference form, stored statistics); LRN,
LayerNormalization, RMSNormalization, InstanceNormalization, GroupNormalization,
LpNormalization, MeanVarianceNormalization (statistics of the input, computed in float64: see
the float kernels). One MACC per element, LRN ``size`` per element (its window sum)."""
from __future__ import annotations

import math

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import LAYOUT_ATTR, channel_axis, macc_per_output, need_rank, same_type


@op("BatchNormalization", "normalization", inputs=("X", "scale", "B", "mean", "var"),
    attrs={"epsilon": Attr("float", 1e-5), "layout": LAYOUT_ATTR}, macc=macc_per_output)
def batch_normalization(inputs, attrs):
    """``Y = (X - mean) / sqrt(var + epsilon) * scale + B`` per channel (the channel axis is
    1 for NCHW and for rank < 3 inputs, last for NHWC)."""
    x = inputs[0]
    axis = channel_axis(attrs["layout"]) if x.rank == 4 else min(1, x.rank - 1)
    channels = x.shape[axis]
    for name, value in zip(("scale", "B", "mean", "var"), inputs[1:]):
        if value is None or value.shape != (channels,):
            raise ValueError(f"{name} must be [{channels}], got "
                             f"{'nothing' if value is None else value.type_str()}")
    return same_type(inputs)


def _lrn_macc(node) -> int:
    """MACC = output elements x size (the sum of squares over the channel window)."""
    return math.prod(node.outputs[0].shape) * node.attrs["size"]


@op("LRN", "normalization", inputs=("X",), macc=_lrn_macc,
    attrs={"size": Attr("int"), "alpha": Attr("float", 1e-4), "beta": Attr("float", 0.75),
           "bias": Attr("float", 1.0), "layout": LAYOUT_ATTR})
def lrn(inputs, attrs):
    """Local response normalisation across channels (ONNX LRN; TFLite
    LOCAL_RESPONSE_NORMALIZATION with ``size = 2 * radius + 1`` and ``alpha = alpha_tfl *
    size``): ``Y[c] = X[c] / (bias + alpha / size * sum_{i = c - floor((size-1)/2)}^{c +
    ceil((size-1)/2)} X[i]^2)^beta``, the sum clipped to the existing channels. The channel
    axis is the layout's (rank 4) or axis 1 (NCHW, any rank >= 2)."""
    x = inputs[0]
    if x.rank < 2 or attrs["size"] <= 0:
        raise ValueError(f"LRN needs rank >= 2 and size > 0, got {x.type_str()}, size {attrs['size']}")
    if attrs["layout"] == "NHWC":
        need_rank(x, 4, "NHWC LRN input X")
    return same_type(inputs)


def _normalized_axes(x, axis: int) -> int:
    if not -x.rank <= axis < x.rank:
        raise ValueError(f"axis {axis} out of range for {x.type_str()}")
    return axis % x.rank


def _check_broadcast_to(value, x, what: str) -> None:
    if value is None:
        return
    if len(value.shape) > x.rank or any(v not in (1, d) for v, d in
                                        zip(reversed(value.shape), reversed(x.shape))):
        raise ValueError(f"{what} {value.type_str()} does not broadcast to X {x.type_str()}")


STASH = {"stash_type": Attr("int", 1)}


@op("LayerNormalization", "normalization", inputs=("X", "scale", "B?"), outputs=3,
    macc=macc_per_output,
    attrs={"axis": Attr("int", -1), "epsilon": Attr("float", 1e-5), **STASH})
def layer_normalization(inputs, attrs):
    """Over the axes from ``axis`` on: ``mean = avg(X)``, ``inv_std = 1 / sqrt(avg((X -
    mean)^2) + epsilon)``, ``Y = (X - mean) * inv_std * scale + B`` (scale and B broadcast).
    Outputs Y, Mean and InvStdDev (the last two of shape ``X.shape[:axis] + 1...``, float32
    when ``stash_type`` is 1)."""
    x = inputs[0]
    axis = _normalized_axes(x, attrs["axis"])
    _check_broadcast_to(inputs[1], x, "scale")
    _check_broadcast_to(inputs[2] if len(inputs) > 2 else None, x, "B")
    stats = TensorType(DType.FLOAT32 if attrs["stash_type"] == 1 else x.dtype,
                       x.shape[:axis] + (1,) * (x.rank - axis))
    return [TensorType(x.dtype, x.shape), stats, stats]


@op("RMSNormalization", "normalization", inputs=("X", "scale"), macc=macc_per_output,
    attrs={"axis": Attr("int", -1), "epsilon": Attr("float", 1e-5), **STASH})
def rms_normalization(inputs, attrs):
    """``Y = X / sqrt(avg(X^2) + epsilon) * scale`` over the axes from ``axis`` on."""
    _normalized_axes(inputs[0], attrs["axis"])
    _check_broadcast_to(inputs[1], inputs[0], "scale")
    return same_type(inputs)


def _per_channel(x, values, layout: str, groups: int | None = None) -> None:
    channels = x.shape[channel_axis(layout) if x.rank == 4 else 1]
    for name, value in values:
        if value is None or value.shape != (channels,):
            raise ValueError(f"{name} must be [{channels}], got "
                             f"{'nothing' if value is None else value.type_str()}")
    if groups is not None and (groups <= 0 or channels % groups):
        raise ValueError(f"{channels} channels do not split into {groups} groups")


@op("InstanceNormalization", "normalization", inputs=("X", "scale", "B"), macc=macc_per_output,
    attrs={"epsilon": Attr("float", 1e-5), "layout": LAYOUT_ATTR})
def instance_normalization(inputs, attrs):
    """Per sample and channel over the spatial axes: ``Y = (X - mean) / sqrt(var +
    epsilon) * scale[c] + B[c]`` (NCHW: axes 2...; NHWC rank 4: axes 1, 2)."""
    x = inputs[0]
    if x.rank < 3:
        raise ValueError(f"InstanceNormalization needs rank >= 3, got {x.type_str()}")
    _per_channel(x, [("scale", inputs[1]), ("B", inputs[2])], attrs["layout"])
    return same_type(inputs)


@op("GroupNormalization", "normalization", inputs=("X", "scale", "B"), macc=macc_per_output,
    attrs={"num_groups": Attr("int"), "epsilon": Attr("float", 1e-5), **STASH})
def group_normalization(inputs, attrs):
    """NCHW: channels split into ``num_groups`` groups; per sample and group over its
    channels and the spatial axes ``Y = (X - mean) / sqrt(var + epsilon)``, then
    ``* scale[c] + B[c]`` per channel (opset 21 semantics)."""
    x = inputs[0]
    if x.rank < 3:
        raise ValueError(f"GroupNormalization needs rank >= 3, got {x.type_str()}")
    _per_channel(x, [("scale", inputs[1]), ("B", inputs[2])], "NCHW", attrs["num_groups"])
    return same_type(inputs)


@op("LpNormalization", "normalization", inputs=("X",), macc=macc_per_output,
    attrs={"axis": Attr("int", -1), "p": Attr("int", 2, (1, 2))})
def lp_normalization(inputs, attrs):
    """``Y = X / ||X||_p`` along ``axis`` (p = 1 or 2; a zero norm gives NaN, as 0 / 0)."""
    _normalized_axes(inputs[0], attrs["axis"])
    return same_type(inputs)


@op("MeanVarianceNormalization", "normalization", inputs=("X",), macc=macc_per_output,
    attrs={"axes": Attr("ints", (0, 2, 3))})
def mean_variance_normalization(inputs, attrs):
    """``Y = (X - mean) / (sqrt(var) + 1e-9)`` over ``axes`` (ONNX's function body)."""
    x = inputs[0]
    if any(not -x.rank <= a < x.rank for a in attrs["axes"]):
        raise ValueError(f"axes {list(attrs['axes'])} out of range for {x.type_str()}")
    return same_type(inputs)
