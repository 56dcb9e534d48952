"""Quantization scheme: scale / zero point from an observed range, and TFLite's op constraints.

A quantized value ``q`` stands for ``r = scale * (q - zero_point)``. From a real range
``[low, high]`` (first widened to contain 0, so that 0.0 is exactly representable, as the
TFLite spec requires for zero padding and ReLU):

* asymmetric int8 activations: ``scale = (high - low) / 255``,
  ``zero_point = clamp(round(-128 - low / scale), -128, 127)``;
* symmetric int16 activations (16x8 mode): ``scale = max(|low|, |high|) / 32767``, zero point 0;
* symmetric int8 weights, per output channel (axis 0) by default, per tensor on request:
  ``scale[o] = max|W[o]| / 127``, zero point 0, and, in float32 arithmetic with ties rounded
  away from zero as TFLite's converter does (checked weight for weight against the MLPerf
  Tiny int8 models), ``q = clamp(round(W * inverse), -127, 127)`` with
  ``inverse = float32(127 / max|W[o]|)`` (``float32(1 / scale)`` for a scale raised to fit
  the bias): float64 ``W / scale`` rounds some ``x.5`` ties the other way;
* int32 bias (int64 in 16x8 mode): ``scale[o] = float32(input_scale * weight_scale[o])``,
  zero point 0, ``q = round(B * float32(1 / scale))``, again in float32, ties away from zero.

Op constraints of the TensorFlow Lite 8-bit quantization specification
(``tensorflow.org/lite/performance/quantization_spec``), applied by :mod:`.apply`:

* fixed output parameters: Softmax and Logistic (Sigmoid) ``1/256, -128`` in int8 and
  ``1/32768, 0`` in int16; Tanh ``1/128, 0`` in int8 and ``1/32768, 0`` in int16;
* same parameters in and out ("restriction: input and outputs must all have same scale /
  zero_point"): MaxPool, AveragePool, Reshape-like ops, Transpose, Slice, Pad, Resize,
  Concat (all inputs too). :data:`SAME_PARAMS_OPS` lists them; the quantizer gives every
  tensor of such an op the union of their observed ranges.
"""
from __future__ import annotations

import numpy as np

from ..ir import QuantParams

INT8_RANGE = (-128, 127)
INT16_RANGE = (-32768, 32767)
WEIGHT_LIMIT = 127        # symmetric int8 weights use [-127, 127]
INT32_LIMIT = 2**31 - 1
BIAS_LIMIT = 2**30        # quantized bias bound: leaves the int32 accumulator headroom

# op -> {activation dtype: (scale, zero point)} of its output.
FIXED_OUTPUT_PARAMS: dict[str, dict[str, tuple[float, int]]] = {
    "Softmax": {"int8": (1.0 / 256.0, -128), "int16": (1.0 / 32768.0, 0)},
    "Sigmoid": {"int8": (1.0 / 256.0, -128), "int16": (1.0 / 32768.0, 0)},
    "Tanh": {"int8": (1.0 / 128.0, 0), "int16": (1.0 / 32768.0, 0)},
}

# Ops whose output (and, for Concat, every input) shares the input's parameters.
SAME_PARAMS_OPS = frozenset({
    "MaxPool", "AveragePool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",
    "Slice", "Pad", "Resize", "Identity", "Dropout", "Concat", "Split", "DepthToSpace",
})


def widen_to_zero(low: float, high: float) -> tuple[float, float]:
    """``[min(low, 0), max(high, 0)]``: the range a quantized tensor must cover."""
    return min(float(low), 0.0), max(float(high), 0.0)


def activation_params(low: float, high: float, dtype: str = "int8") -> QuantParams:
    """Per-tensor parameters covering ``[low, high]``: asymmetric for int8, symmetric
    (zero point 0) for int16. A degenerate range (all zeros) gets scale 1."""
    low, high = widen_to_zero(low, high)
    if dtype == "int16":
        bound = max(-low, high)
        scale = np.float32(bound / INT16_RANGE[1]) if bound > 0 else np.float32(1.0)
        return QuantParams(np.array([scale]), np.array([0]))
    qmin, qmax = INT8_RANGE
    if high - low <= 0:
        return QuantParams(np.array([1.0], np.float32), np.array([0]))
    scale = np.float32((high - low) / (qmax - qmin))
    zero_point = int(np.clip(np.round(qmin - low / float(scale)), qmin, qmax))
    return QuantParams(np.array([scale]), np.array([zero_point]))


def fixed_output_params(op: str, dtype: str) -> QuantParams | None:
    """TFLite's fixed output parameters of ``op`` in ``dtype``, or ``None``."""
    table = FIXED_OUTPUT_PARAMS.get(op)
    if table is None:
        return None
    scale, zero_point = table[dtype]
    return QuantParams(np.array([scale], np.float32), np.array([zero_point]))


def quantize_array(array: np.ndarray, params: QuantParams, dtype: str) -> np.ndarray:
    """``clamp(round_half_even(array / scale) + zero_point)`` stored as ``dtype``."""
    shape = params.broadcast_shape(array.ndim)
    info = np.iinfo(np.dtype(dtype))
    scaled = np.round(array.astype(np.float64) / params.scale.astype(np.float64).reshape(shape))
    return np.clip(scaled + params.zero_point.reshape(shape), info.min, info.max).astype(dtype)


def weight_scales(weights: np.ndarray, per_channel: bool = True) -> np.ndarray:
    """``max|W| / 127`` per output channel (axis 0), or one scale; all-zero channels borrow
    the mean scale of the others (any positive scale represents them exactly)."""
    flat = np.abs(weights.astype(np.float64)).reshape(weights.shape[0], -1)
    peaks = flat.max(axis=1) if per_channel else np.array([flat.max()])
    scales = peaks / WEIGHT_LIMIT
    positive = scales[scales > 0]
    fallback = positive.mean() if positive.size else 1.0 / WEIGHT_LIMIT
    return np.where(scales > 0, scales, fallback).astype(np.float32)


def round_half_away(values: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C's ``round``, TFLite's ``TfLiteRound``); exact
    for float32 ``values`` (the addition is done in float64)."""
    wide = np.asarray(values, np.float64)
    return np.trunc(wide + np.copysign(0.5, wide))


def _weight_inverses(weights: np.ndarray, scales: np.ndarray, per_channel: bool) -> np.ndarray:
    """float32 ``127 / max|W[o]|`` where ``scale[o]`` is ``max|W[o]| / 127``, else
    ``1 / scale[o]`` (TFLite's converter multiplies by the former)."""
    flat = np.abs(weights.astype(np.float32)).reshape(weights.shape[0], -1)
    peaks = flat.max(axis=1) if per_channel else np.array([flat.max()], np.float32)
    standard = (peaks > 0) & (np.float32(peaks / np.float32(WEIGHT_LIMIT)) == scales)
    safe_peaks = np.where(peaks > 0, peaks, np.float32(1.0))
    return np.where(standard, np.float32(WEIGHT_LIMIT) / safe_peaks,
                    np.float32(1.0) / scales).astype(np.float32)


def weight_params(weights: np.ndarray, per_channel: bool = True,
                  scales: np.ndarray | None = None) -> tuple[np.ndarray, QuantParams]:
    """Symmetric int8 weights and their parameters (axis 0 when per channel), rounded in
    float32 like TFLite's converter (module docstring)."""
    scales = (weight_scales(weights, per_channel) if scales is None else scales).astype(np.float32)
    params = QuantParams(scales, np.zeros(scales.shape, np.int64), 0 if per_channel else None)
    inverses = _weight_inverses(weights, scales, per_channel).reshape(params.broadcast_shape(weights.ndim))
    quantized = round_half_away(weights.astype(np.float32) * inverses)
    return np.clip(quantized, -WEIGHT_LIMIT, WEIGHT_LIMIT).astype(np.int8), params


def fit_weight_scales_to_bias(weights: np.ndarray, bias: np.ndarray | None, input_scale: float,
                              per_channel: bool = True) -> np.ndarray:
    """Weight scales, raised where needed so that ``|bias / (input_scale * weight_scale)|``
    stays below ``2^30`` (a huge bias with tiny weights would otherwise saturate int32 or
    leave the accumulator no headroom)."""
    scales = weight_scales(weights, per_channel).astype(np.float64)
    if bias is not None:
        needed = np.abs(bias.astype(np.float64)).reshape(-1) / (float(input_scale) * BIAS_LIMIT)
        scales = np.maximum(scales, needed.max() if not per_channel else needed)
    return scales.astype(np.float32)


def bias_params(bias: np.ndarray, input_scale: float, weight: QuantParams,
                dtype: str = "int32") -> tuple[np.ndarray, QuantParams]:
    """Bias quantized with ``scale = float32(input_scale * weight_scale)`` (per channel), zero
    point 0, ``q = round(B * float32(1 / scale))`` in float32 like TFLite's converter."""
    scales = (np.float32(input_scale) * weight.scale.astype(np.float32)).astype(np.float32)
    count = bias.size
    if scales.size == 1 and count > 1:
        params = QuantParams(scales, np.zeros(1, np.int64))
    else:
        params = QuantParams(scales, np.zeros(scales.shape, np.int64), 0 if scales.size > 1 else None)
    inverses = np.divide(np.float32(1.0), scales, out=np.zeros_like(scales), where=scales > 0)
    scaled = round_half_away(bias.astype(np.float32).reshape(-1) * inverses)
    info = np.iinfo(np.dtype(dtype))
    values = np.clip(scaled, info.min, info.max).astype(dtype)
    return values, params
