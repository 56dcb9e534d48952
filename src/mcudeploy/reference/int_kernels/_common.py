"""Helpers shared by the integer kernels: quantization lookups with clear errors, the fused
activation clamp, requantization of accumulators, exact dot products, batch folding."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node, Value
from ..float_kernels._common import grouped_products, windows  # noqa: F401  (re-exported for the int kernels)

if TYPE_CHECKING:   # annotations only: importing numpy.typing costs every plan
    import numpy.typing as npt

EXACT_FLOAT32, EXACT_FLOAT64 = 2**24, 2**53  # integers exactly representable below these


def where(node: Node) -> str:
    return f"node {node.name!r} ({node.op})"


def per_tensor(node: Node, value: Value, role: str) -> tuple[np.float32, int]:
    """``(scale as float32, zero point)`` of a per-tensor quantized value, else
    :class:`UnsupportedError` naming the node and the value."""
    quant = value.quant
    if quant is None:
        raise UnsupportedError(f"{where(node)}: {role} {value.name!r} ({value.type_str()}) has no "
                               "quantization parameters; the integer reference runs fully "
                               "quantized graphs only (quantize the model first)")
    if quant.scale.size != 1:
        raise UnsupportedError(f"{where(node)}: {role} {value.name!r} is quantized per channel; "
                               "this op needs one scale and zero point per tensor")
    return np.float32(quant.scale[0]), int(quant.zero_point[0])


def need_dtype(node: Node, value: Value, allowed: tuple[str, ...], role: str) -> str:
    """The dtype name of ``value``; ``UnsupportedError`` unless it is one of ``allowed``."""
    name = value.dtype.value
    if name not in allowed:
        raise UnsupportedError(f"{where(node)}: {role} {value.name!r} is {name}; the integer "
                               f"kernel supports {', '.join(allowed)}")
    return name


def need_zero_point(node: Node, value: Value, zero_point: int, expected: int, role: str) -> None:
    if zero_point != expected:
        raise UnsupportedError(f"{where(node)}: {role} {value.name!r} has zero point {zero_point}; "
                               f"TFLite's integer kernel requires {expected} here")


def activation_range(node: Node) -> tuple[int, int]:
    """The node's fused clamp in the output's quantized domain (TFLite
    ``CalculateActivationRangeQuantized``); the full dtype range when there is none."""
    out = node.outputs[0]
    scale, zero_point = per_tensor(node, out, "output")
    return fp.quantized_activation_range(node.attrs.get("activation_min"),
                                         node.attrs.get("activation_max"),
                                         float(scale), zero_point, out.dtype.numpy)


def requantize(acc: np.ndarray, multiplier, shift, *, int64_accumulator: bool = False) -> np.ndarray:
    """``MultiplyByQuantizedMultiplier`` of an accumulator: the int32 (double rounding) form,
    or the reduced-multiplier int64 form used by 16x8 kernels with int64 accumulators."""
    if int64_accumulator:
        return fp.multiply_by_quantized_multiplier_int64(acc, multiplier, shift)
    return fp.multiply_by_quantized_multiplier(fp.wrap_int32(acc), multiplier, shift)


def requantize_and_clamp(acc: np.ndarray, multiplier, shift, offset: int, low: int, high: int,
                         dtype: np.dtype, *, int64_accumulator: bool = False,
                         fits_int32: bool = False) -> np.ndarray:
    """``clamp(requantize(acc, multiplier, shift) + offset, low, high)`` stored as ``dtype``.

    Fast path (int32 accumulator, every shift <= 0), same result with fewer passes:
    ``srdhm`` is ``(acc * m + 2^30) >> 31``, and the output offset folds into the rounding
    division, ``rdbpot(v, e) + offset = (v + 2^(e-1) - (v < 0) + offset * 2^e) >> e``.
    ``fits_int32`` (the caller's bound on ``|acc|``) skips the int32 wrap check; the fast
    path then works in place on ``acc`` (an int64 temporary the caller gives up).
    """
    shift = np.asarray(shift, dtype=np.int64)
    if int64_accumulator or np.any(shift > 0):
        scaled = requantize(acc, multiplier, shift, int64_accumulator=int64_accumulator)
        return clamp_to(scaled + offset, low, high, dtype)
    value = acc if fits_int32 and acc.dtype == np.int64 else fp.wrap_int32(acc).copy()
    value *= np.asarray(multiplier, dtype=np.int64)
    value += 2**30
    value >>= 31
    exponent = -shift
    rounding = ((np.int64(1) << exponent) >> 1) + (np.int64(offset) << exponent)
    negative = value >> 63
    if not np.all(exponent > 0):
        negative &= -(exponent > 0).astype(np.int64)
    value += negative
    value += rounding
    value >>= exponent
    np.clip(value, low, high, out=value)
    return value.astype(dtype)


def clamp_to(values: np.ndarray, low: int, high: int, dtype: npt.DTypeLike) -> np.ndarray:
    """Clamp to ``[low, high]`` and store as ``dtype`` (the kernel's final saturation)."""
    return np.clip(values, low, high).astype(dtype)


def exact_float_dtype(depth: int, left_bound: int, right_bound: int) -> np.dtype | None:
    """The narrowest float dtype in which a ``depth``-long dot product of integers bounded by
    ``left_bound`` and ``right_bound`` is exact (every partial sum, in any order, is an
    integer below 2^24 for float32, 2^53 for float64); ``None`` when neither is."""
    bound = depth * left_bound * right_bound
    if bound < EXACT_FLOAT32:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if bound < EXACT_FLOAT64 else None


def exact_dot(left: np.ndarray, right: np.ndarray, left_bound: int, right_bound: int) -> np.ndarray:
    """``left @ right`` of integer-valued arrays with ``|left| <= left_bound`` and
    ``|right| <= right_bound``, exactly, as int64 (float BLAS when exact, int64 otherwise)."""
    dtype = exact_float_dtype(left.shape[-1], left_bound, right_bound)
    if dtype is None:
        return np.matmul(left.astype(np.int64), right.astype(np.int64))
    return np.matmul(left.astype(dtype, copy=False), right.astype(dtype, copy=False)).astype(np.int64)


def offset_bound(dtype: np.dtype, offset: int) -> int:
    """The largest ``|x + offset|`` for ``x`` of integer ``dtype``."""
    info = np.iinfo(dtype)
    return max(abs(int(info.min) + offset), abs(int(info.max) + offset))


def pad_hw(x: np.ndarray, pads: tuple[int, ...], fill=0) -> np.ndarray:
    """NHWC ``x`` padded by ``(top, left, bottom, right)`` with ``fill`` (``x`` itself when
    there is no padding)."""
    top, left, bottom, right = pads
    if not any(pads):
        return x
    n, height, width, channels = x.shape
    padded = np.full((n, height + top + bottom, width + left + right, channels), fill, dtype=x.dtype)
    padded[:, top:top + height, left:left + width] = x
    return padded


def align_ranks(*arrays: np.ndarray) -> list[np.ndarray]:
    """Operands with a leading batch axis, given equal rank by inserting size-1 axes *after*
    the batch axis, so numpy broadcasting aligns the values' own shapes to the right."""
    rank = max(a.ndim for a in arrays)
    return [a.reshape(a.shape[:1] + (1,) * (rank - a.ndim) + a.shape[1:]) for a in arrays]


def fold_batch(array: np.ndarray) -> np.ndarray:
    """``(B, N, ...)`` -> ``(B * N, ...)``: the run's batch axis folded into the value's own."""
    return array.reshape((-1,) + array.shape[2:])


def unfold_batch(array: np.ndarray, batch: int) -> np.ndarray:
    """Inverse of :func:`fold_batch`."""
    return array.reshape((batch, -1) + array.shape[1:])
