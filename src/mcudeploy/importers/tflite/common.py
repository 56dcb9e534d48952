"""TFLite conventions shared by the op converters: the converter table, SAME / VALID padding,
fused activations, axis arguments.

SAME / VALID become explicit pads exactly as TFLite computes them, per spatial axis::

    out    = ceil(in / stride)                            (SAME)
           = ceil((in - ((k - 1) * dilation + 1) + 1) / stride)   (VALID)
    total  = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)   (SAME; VALID pads 0)
    before = total // 2,  after = total - before

A fused activation is a clamp of the op's output: NONE -> no clamp, RELU -> [0, inf),
RELU6 -> [0, 6], RELU_N1_TO_1 -> [-1, 1]; TANH and SIGN_BIT are not supported.
"""
from __future__ import annotations

from typing import Any, Callable

from .context import ConversionContext
from .schema_tables import ActivationFunctionType, Padding

Converter = Callable[[ConversionContext], None]
CONVERTERS: dict[str, Converter] = {}

ACTIVATION_RANGES: dict[int, tuple[float | None, float | None]] = {
    ActivationFunctionType.NONE: (None, None),
    ActivationFunctionType.RELU: (0.0, None),
    ActivationFunctionType.RELU6: (0.0, 6.0),
    ActivationFunctionType.RELU_N1_TO_1: (-1.0, 1.0),
}
ACTIVATION_NAMES = {code: name for name, code in vars(ActivationFunctionType).items()
                    if not name.startswith("_")}


def converter(*op_names: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of the TFLite builtin ops ``op_names``."""
    def register(function: Converter) -> Converter:
        for name in op_names:
            if name in CONVERTERS:
                raise RuntimeError(f"TFLite op {name} has two converters")
            CONVERTERS[name] = function
        return function
    return register


def fused_activation(ctx: ConversionContext) -> dict[str, Any]:
    """``activation_min`` / ``activation_max`` attributes for the operator's fused activation."""
    code = int(ctx.options.get("fused_activation_function", ActivationFunctionType.NONE))
    if code not in ACTIVATION_RANGES:
        name = ACTIVATION_NAMES.get(code, f"code {code}")
        raise ctx.unsupported(f"fused activation {name} is not supported (supported: NONE, RELU, "
                              "RELU6, RELU_N1_TO_1); un-fuse it before converting the model")
    low, high = ACTIVATION_RANGES[code]
    return {"activation_min": low, "activation_max": high}


def padding_1d(ctx: ConversionContext, size: int, kernel: int, stride: int,
               dilation: int) -> tuple[int, int]:
    """``(before, after)`` padding of one spatial axis for the operator's SAME / VALID padding."""
    padding = int(ctx.options.get("padding", Padding.SAME))
    if padding == Padding.VALID:
        return 0, 0
    if padding != Padding.SAME:
        raise ctx.unsupported(f"padding code {padding} is not SAME or VALID")
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def spatial_pads(ctx: ConversionContext, in_hw: tuple[int, ...], kernel_hw: tuple[int, ...],
                 strides: tuple[int, ...], dilations: tuple[int, ...] = (1, 1)) -> tuple[int, ...]:
    """IR pads ``(top, left, bottom, right)`` for NHWC height / width."""
    top, bottom = padding_1d(ctx, in_hw[0], kernel_hw[0], strides[0], dilations[0])
    left, right = padding_1d(ctx, in_hw[1], kernel_hw[1], strides[1], dilations[1])
    return top, left, bottom, right


def strides_of(ctx: ConversionContext) -> tuple[int, int]:
    strides = int(ctx.options.get("stride_h", 1)), int(ctx.options.get("stride_w", 1))
    if min(strides) <= 0:
        raise ctx.unsupported(f"strides {list(strides)} must be positive")
    return strides


def dilations_of(ctx: ConversionContext) -> tuple[int, int]:
    dilations = (int(ctx.options.get("dilation_h_factor", 1)),
                 int(ctx.options.get("dilation_w_factor", 1)))
    if min(dilations) <= 0:
        raise ctx.unsupported(f"dilations {list(dilations)} must be positive")
    return dilations


def normalize_axis(ctx: ConversionContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.unsupported(f"axis {axis} is out of range for a rank-{rank} tensor")
    return axis % rank
