"""Integer Abs (TFLite ABS, int8 / int16) and Rsqrt (RSQRT, int8), TFLite Micro's
``elementwise.cc``.

Abs: ``needs_rescale = s_in != s_out``; ``m, e = quantize_multiplier(float32(s_in / s_out))``;
``Y = clamp(|X - zp_in| + zp_out)`` without rescale, else
``clamp(mbqm(|X - zp_in|, m, e) + zp_out)`` (int16: zero points 0).

Rsqrt: ``m, e = quantize_multiplier(1 / float32(sqrtf(s_in) * s_out))``; per element
``v = X - zp_in``: ``v = 0`` gives the type's maximum, ``v < 0`` is an error (TFLM refuses
it); else ``(r, k) = inv_sqrt(v)`` (TFLite ``GetInvSqrtQuantizedMultiplierExp``),
``d = mbqm(1, r, k + 20)``, ``Y = clamp(mbqm(d, m, e - 20) + zp_out)``.

``inv_sqrt(v)``: v = 1 gives ``(2^31 - 1, 0)``; else v is normalised to ``[2^27, 2^29)`` by
pairs of bits (shift ``11 - pairs`` + one per division by 4), five Newton steps
``x = 1.5 x - (v/2) x^3`` in Q3.28, times ``sqrt(2)/2`` (Q0.31), then a negative shift is
folded into the multiplier and the shift is negated (``kReverseShift``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import DataError
from ...ir import Node
from ._common import clamp_to, need_dtype, need_zero_point, per_tensor, where
from .registry import int_kernel

HALF_SQRT_2_Q31 = 1518500250
RSQRT_SHIFT = 20


@dataclass(frozen=True)
class AbsParams:
    input_zero_point: int
    output_zero_point: int
    needs_rescale: int
    multiplier: int
    shift: int


@dataclass(frozen=True)
class RsqrtParams:
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int


def prepare_abs(node: Node) -> AbsParams:
    kind = need_dtype(node, node.inputs[0], ("int8", "int16"), "input")
    need_dtype(node, node.outputs[0], (kind,), "output")
    s_in, zp_in = per_tensor(node, node.inputs[0], "input")
    s_out, zp_out = per_tensor(node, node.outputs[0], "output")
    if kind == "int16":
        need_zero_point(node, node.inputs[0], zp_in, 0, "int16 input")
        need_zero_point(node, node.outputs[0], zp_out, 0, "int16 output")
    multiplier, shift = fp.quantize_multiplier(float(np.float32(s_in / s_out)))
    return AbsParams(zp_in, zp_out, int(s_in != s_out), multiplier, shift)


@int_kernel("Abs", prepare=prepare_abs)
def abs_(node: Node, params: AbsParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    value = np.abs(x.astype(np.int64) - params.input_zero_point)
    if params.needs_rescale:
        value = fp.multiply_by_quantized_multiplier(value, params.multiplier, params.shift)
    info = np.iinfo(x.dtype)
    return [clamp_to(value + params.output_zero_point, int(info.min), int(info.max), x.dtype)]


def prepare_rsqrt(node: Node) -> RsqrtParams:
    need_dtype(node, node.inputs[0], ("int8",), "input")
    need_dtype(node, node.outputs[0], ("int8",), "output")
    s_in, zp_in = per_tensor(node, node.inputs[0], "input")
    s_out, zp_out = per_tensor(node, node.outputs[0], "output")
    multiplier, shift = fp.quantize_multiplier(1.0 / float(np.sqrt(s_in) * s_out))
    return RsqrtParams(zp_in, zp_out, multiplier, shift)


def _newton_inverse_sqrt(value: np.ndarray) -> np.ndarray:
    """Five Newton steps for ``1 / sqrt(v)`` on Q3.28 ``v`` in [1/2, 2) (raw ``[2^27, 2^29)``
    halved to Q3.28), result in Q3.28 (gemmlowp fixed point)."""
    srdhm = fp.saturating_rounding_doubling_high_mul
    half_input = fp.rounding_divide_by_pot(value >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(value.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        cube = fp.saturating_rounding_multiply_by_pot(srdhm(srdhm(x, x), x), 6)
        x = fp.saturating_rounding_multiply_by_pot(
            fp.wrap_int32(srdhm(half_three, x) - srdhm(half_input, cube)), 3)
    return srdhm(x, HALF_SQRT_2_Q31)


def inverse_sqrt_multiplier(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite ``GetInvSqrtQuantizedMultiplierExp(v, kReverseShift)`` for int32 ``v >= 2``:
    ``(multiplier, left shift)`` with ``1 / sqrt(v) ~ multiplier * 2^(shift - 31)``."""
    value = np.asarray(value, dtype=np.int64).copy()
    shift = np.full(value.shape, 11, dtype=np.int64)
    while np.any(value >= 1 << 29):
        big = value >= 1 << 29
        value = np.where(big, value // 4, value)
        shift += big
    pairs = (fp.count_leading_zeros_32(value) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    multiplier = _newton_inverse_sqrt(value)
    multiplier = fp.wrap_int32(np.where(shift < 0, multiplier << np.maximum(-shift, 0), multiplier))
    return multiplier, -np.maximum(shift, 0)


@int_kernel("Rsqrt", prepare=prepare_rsqrt)
def rsqrt(node: Node, params: RsqrtParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    value = x.astype(np.int64) - params.input_zero_point
    if np.any(value < 0):
        raise DataError(f"{where(node)}: input below the zero point {params.input_zero_point} "
                        "(a negative real value); RSQRT is only defined for positive values")
    small = value <= 1
    multiplier, shift = inverse_sqrt_multiplier(np.maximum(value, 2))
    multiplier = np.where(small, 2**31 - 1, multiplier)
    shift = np.where(small, 0, shift)
    data = fp.multiply_by_quantized_multiplier(np.ones_like(value), multiplier, shift + RSQRT_SHIFT)
    result = fp.multiply_by_quantized_multiplier(data, params.multiplier,
                                                 params.shift - RSQRT_SHIFT) + params.output_zero_point
    result = np.where(value == 0, 127, result)
    return [clamp_to(result, -128, 127, x.dtype)]
