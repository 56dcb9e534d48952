"""Quantization parameters attached to IR values.

A quantized value ``q`` stands for the real number ``r = scale * (q - zero_point)``.
Per-tensor parameters hold one scale and one zero point (``axis is None``); per-channel
parameters hold one of each per index along ``axis`` (TFLite's ``quantized_dimension``,
ONNX's ``axis``). Scales are float32 in TFLite and ONNX alike; they are kept exactly as
stored, because requantization multipliers are derived from these exact bits.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class QuantParams:
    """Affine quantization of a value: scale and zero point, per tensor or per channel."""
    scale: np.ndarray        # float32, shape (1,) per tensor or (channels,) per channel
    zero_point: np.ndarray   # int64, same shape as scale
    axis: int | None = None  # None for per-tensor

    def __post_init__(self) -> None:
        scale = np.atleast_1d(np.asarray(self.scale, dtype=np.float32))
        zero_point = np.atleast_1d(np.asarray(self.zero_point, dtype=np.int64))
        if zero_point.size == 1 and scale.size > 1:
            zero_point = np.full(scale.shape, zero_point[0], dtype=np.int64)
        if scale.shape != zero_point.shape or scale.ndim != 1:
            raise ValueError(f"scale {scale.shape} and zero_point {zero_point.shape} must be "
                             "equal-length vectors")
        if self.axis is None and scale.size != 1:
            raise ValueError(f"per-tensor quantization needs one scale, got {scale.size}")
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "zero_point", zero_point)

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, QuantParams) and self.axis == other.axis
                and np.array_equal(self.scale, other.scale)
                and np.array_equal(self.zero_point, other.zero_point))

    def __hash__(self) -> int:
        return hash((self.axis, self.scale.tobytes(), self.zero_point.tobytes()))

    def broadcast_shape(self, rank: int) -> tuple[int, ...]:
        """Shape that broadcasts scale / zero point against a tensor of ``rank``."""
        if self.axis is None:
            return (1,) * rank
        shape = [1] * rank
        shape[self.axis % rank] = self.scale.size
        return tuple(shape)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """``scale * (q - zero_point)`` in float32 (broadcast along ``axis``)."""
        shape = self.broadcast_shape(q.ndim)
        return (self.scale.reshape(shape)
                * (q.astype(np.int64) - self.zero_point.reshape(shape))).astype(np.float32)

    def describe(self) -> str:
        """Short text for dumps and reports, e.g. ``s=0.0235 zp=-128`` or ``per-ch axis=0 (16)``."""
        if self.axis is None:
            return f"s={float(self.scale[0]):.6g} zp={int(self.zero_point[0])}"
        return f"per-channel axis={self.axis} ({self.scale.size} scales)"
