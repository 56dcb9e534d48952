"""Helpers shared by op definitions: broadcasting, window arithmetic, layouts, MACC rules."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..registry import Attr, TensorType

LAYOUTS = ("NCHW", "NHWC")
LAYOUT_ATTR = Attr("str", "NCHW", LAYOUTS)

# A fused activation is a clamp of the op's output to [activation_min, activation_max]
# (None = unbounded): ReLU = (0, None), ReLU6 = (0, 6), ReLU_N1_TO_1 = (-1, 1). For
# quantized ops it becomes a clamp of the quantized output, as in TFLite.
ACTIVATION_ATTRS = {"activation_min": Attr("float?", None), "activation_max": Attr("float?", None)}


def spatial_axes(layout: str) -> tuple[int, int]:
    """Axes of H and W in a rank-4 tensor of ``layout``."""
    return (2, 3) if layout == "NCHW" else (1, 2)


def channel_axis(layout: str) -> int:
    return 1 if layout == "NCHW" else 3


def need_rank(value: Any, rank: int, what: str) -> None:
    if value is None or len(value.shape) != rank:
        got = "nothing" if value is None else f"rank {len(value.shape)} {value.type_str()}"
        raise ValueError(f"{what} must be rank {rank}, got {got}")


def broadcast(*shapes: Sequence[int]) -> tuple[int, ...]:
    """Numpy broadcasting of shapes; ``ValueError`` names both shapes when they clash."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast") from None


def window_out(size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int,
               ceil_mode: bool = False) -> int:
    """Output length of a conv / pool window sliding over ``size`` elements.

    ``out = floor((size + pad_begin + pad_end - ((kernel - 1) * dilation + 1)) / stride) + 1``;
    with ``ceil_mode`` the division rounds up, but (as ONNX specifies) the last window must
    start inside the input or its begin padding.
    """
    effective = (kernel - 1) * dilation + 1
    span = size + pad_begin + pad_end - effective
    if span < 0:
        raise ValueError(f"window of {effective} (kernel {kernel}, dilation {dilation}) is larger "
                         f"than the padded input {size + pad_begin + pad_end}")
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def same_type(inputs: Sequence[Any], index: int = 0) -> list[TensorType]:
    return [TensorType(inputs[index].dtype, inputs[index].shape)]


def macc_per_output(node: Any) -> int:
    """One MACC per output element (elementwise ops, activations, normalisation)."""
    return sum(math.prod(v.shape) for v in node.outputs)


def macc_per_input(node: Any) -> int:
    """One MACC per element of the first input (global pooling, reductions)."""
    return math.prod(node.inputs[0].shape)
