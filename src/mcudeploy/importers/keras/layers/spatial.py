"""Keras's spatial options as IR attributes: ``padding`` ``valid`` / ``same`` as explicit
pads (TensorFlow's rule, the same the TFLite importer uses), per spatial axis::

    out    = ceil(in / stride)                                    (same)
    total  = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)
    before = total // 2,  after = total - before                  (valid: 0, 0)

IR pads are ``(top, left, bottom, right)``.
"""
from __future__ import annotations

from typing import Any

from ..context import LayerContext


def pair(ctx: LayerContext, key: str, default: Any) -> tuple[int, int]:
    """An int-or-pair option (``kernel_size``, ``strides``, ``dilation_rate``) as a pair."""
    value = ctx.option(key, default)
    if value is None:
        value = default
    if isinstance(value, int):
        value = (value, value)
    if not isinstance(value, (list, tuple)) or len(value) != 2 \
            or not all(isinstance(v, int) and v > 0 for v in value):
        raise ctx.unsupported(f"{key} {value!r} must be one or two positive integers")
    return int(value[0]), int(value[1])


def padding_1d(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def spatial_pads(ctx: LayerContext, in_hw: tuple[int, ...], kernel: tuple[int, int],
                 strides: tuple[int, int], dilations: tuple[int, int] = (1, 1)) -> tuple[int, ...]:
    padding = str(ctx.option("padding", "valid")).lower()
    if padding == "valid":
        return 0, 0, 0, 0
    if padding != "same":
        raise ctx.unsupported(f"padding {padding!r} is not supported (valid or same)")
    top, bottom = padding_1d(in_hw[0], kernel[0], strides[0], dilations[0])
    left, right = padding_1d(in_hw[1], kernel[1], strides[1], dilations[1])
    return top, left, bottom, right
