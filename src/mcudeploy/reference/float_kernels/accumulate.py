"""Float ConvAccumulate and RequantizeAccumulator (:mod:`mcudeploy.ir.opdefs.accumulate`) on
real numbers: ``Y = A + conv(X[..., b : b + C_g], W)`` (NHWC, float64 sums) and
``Y = clamp(A, activation_min, activation_max)``. The quantized graph the input-channel split
produces runs on the integer reference; these are the ops' real-valued meaning."""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import finish, wide
from .conv import conv2d_nhwc
from .registry import kernel


@kernel("ConvAccumulate")
def conv_accumulate(node: Node, inputs: list) -> list[np.ndarray]:
    x, weights = inputs[0], inputs[1]
    previous = inputs[2] if len(inputs) > 2 else None
    attrs, begin = node.attrs, node.attrs["channel_begin"]
    y = conv2d_nhwc(wide(x[..., begin:begin + weights.shape[3]]), wide(weights), strides=attrs["strides"],
                    dilations=attrs["dilations"], pads=attrs["pads"], group=1, out_hw=node.outputs[0].shape[1:3])
    if previous is not None:
        y = y + wide(previous)
    return finish(y, node)


@kernel("RequantizeAccumulator")
def requantize_accumulator(node: Node, inputs: list) -> list[np.ndarray]:
    return finish(wide(inputs[0]), node)
