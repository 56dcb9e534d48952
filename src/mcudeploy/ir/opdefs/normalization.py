"""Batch normalisation (inference form)."""
from __future__ import annotations

from ..registry import Attr, op
from ._common import LAYOUT_ATTR, channel_axis, macc_per_output, same_type


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
