"""QuantizeLinear and DequantizeLinear at the integer edges (TFLM QUANTIZE / DEQUANTIZE).

Float -> int (``AffineQuantize``): ``Y = clamp(round(X / float(scale)) + zp)`` in float32,
halves rounded as the node's ``rounding`` attribute says: away from zero (TFLite, set by
the TFLite importer) or to even (ONNX, the IR default).

Int -> int (``Requantize``): ``m, s = quantize_multiplier(double(s_in) / double(s_out))``,
``Y = clamp(mbqm(wrap32(X - zp_in), m, s) + zp_out)`` (also int32 -> int8/int16).

Int -> float (``Dequantize``): ``Y = float(double(scale) * (X - zp))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import clamp_to, per_tensor, where
from .registry import int_kernel


@dataclass(frozen=True)
class QuantizeParams:
    scale: np.ndarray            # float32, broadcast shape (per-tensor: one element)
    zero_point: np.ndarray       # int64, same shape
    round_half_even: bool = False  # float -> int only: ONNX rounding instead of TFLite's


@dataclass(frozen=True)
class RequantizeParams:
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int


def _broadcast(quant, rank: int):
    shape = quant.broadcast_shape(rank)
    return quant.scale.reshape(shape), quant.zero_point.reshape(shape)


def prepare_quantize(node: Node) -> QuantizeParams | RequantizeParams:
    x, out = node.inputs[0], node.outputs[0]
    if out.quant is None:
        raise UnsupportedError(f"{where(node)}: output {out.name!r} has no quantization parameters")
    if x.dtype.is_float:
        scale, zero_point = _broadcast(out.quant, out.rank)
        return QuantizeParams(scale.astype(np.float32), zero_point.astype(np.int64),
                              node.attrs["rounding"] == "half_to_even")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    multiplier, shift = fp.quantize_multiplier(float(input_scale) / float(output_scale))
    return RequantizeParams(input_zero_point, output_zero_point, multiplier, shift)


@int_kernel("QuantizeLinear", prepare=prepare_quantize)
def quantize_linear(node: Node, params, inputs: list) -> list[np.ndarray]:
    x, dtype = inputs[0], node.outputs[0].dtype.numpy
    info = np.iinfo(dtype)
    if isinstance(params, QuantizeParams):
        real = x.astype(np.float32) / params.scale
        scaled = np.rint(real) if params.round_half_even else fp.round_half_away(real)
        scaled = np.clip(scaled, -2.0**31, 2.0**31 - 1).astype(np.int64)  # C float->int32 cast range
        return [clamp_to(scaled + params.zero_point, int(info.min), int(info.max), dtype)]
    difference = fp.wrap_int32(x.astype(np.int64) - params.input_zero_point)
    result = fp.multiply_by_quantized_multiplier(difference, params.multiplier, params.shift)
    return [clamp_to(result + params.output_zero_point, int(info.min), int(info.max), dtype)]


def prepare_dequantize(node: Node) -> QuantizeParams:
    x = node.inputs[0]
    if x.quant is None:
        raise UnsupportedError(f"{where(node)}: input {x.name!r} has no quantization parameters")
    scale, zero_point = _broadcast(x.quant, x.rank)
    return QuantizeParams(scale.astype(np.float32), zero_point.astype(np.int64))


@int_kernel("DequantizeLinear", prepare=prepare_dequantize)
def dequantize_linear(node: Node, params: QuantizeParams, inputs: list) -> list[np.ndarray]:
    difference = inputs[0].astype(np.int64) - params.zero_point
    return [(params.scale.astype(np.float64) * difference).astype(np.float32)]
