"""Integer Sigmoid (LOGISTIC), Tanh, HardSwish and LeakyRelu (TFLite Micro semantics).

Sigmoid / Tanh, int8: ``m, s = frexp_multiplier(s_in * 2^27)`` (input as Q4.27),
``radius = calculate_input_radius(4, s)``; ``d = X - zp_in``; ``d <= -radius`` gives the
minimum, ``d >= radius`` the maximum, otherwise
``Y = clamp(rdbpot(f(mbqm(d, m, s)), 23) - 128)`` for Sigmoid (output zp -128, scale 1/256)
and ``Y = clamp(rdbpot(tanh(...), 24))`` for Tanh (zp 0, scale 1/128), with gemmlowp's
fixed-point ``logistic`` / ``tanh`` on Q4.27. int16 uses TFLM's 256-entry sigmoid table
(see :mod:`.smooth_step_int16`).

HardSwish, int8 (TFLite ``reference_ops::HardSwish``), all in int16 arithmetic::

    hires   = (X - zp_in) * 128                         (Q scale s_in / 128)
    pre_out = srdhm16(hires, out_mult16)                 out_mult = s_in / 128 / s_out
    relu    = hires rescaled by reluish_mult (scale 3/32768, saturating) to [-1, 1]
    relu    = (relu + 32768) >> 1                        ([0, 1] in Q0.15)
    Y       = clamp(rdbpot(sdhm16(relu, pre_out), -out_exp) + zp_out)

LeakyRelu (int8 / int16): ``alpha_m = float32(s_in * alpha / s_out)`` and
``identity_m = float32(s_in / s_out)``, each through ``quantize_multiplier``;
``Y = clamp(zp_out + mbqm(X - zp_in, d >= 0 ? identity : alpha))``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import clamp_to, need_dtype, need_zero_point, per_tensor, where
from .registry import int_kernel
from .smooth_step_int16 import SmoothStepInt16Params, prepare_smooth_step_int16, sigmoid_int16, tanh_int16

INPUT_INTEGER_BITS = 4


@dataclass(frozen=True)
class SmoothStepParams:  # Sigmoid and Tanh
    input_zero_point: int
    input_multiplier: int
    input_left_shift: int
    input_range_radius: int


@dataclass(frozen=True)
class HardSwishParams:
    input_zero_point: int
    output_zero_point: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int


@dataclass(frozen=True)
class LeakyReluParams:
    input_zero_point: int
    output_zero_point: int
    output_multiplier_alpha: int
    output_shift_alpha: int
    output_multiplier_identity: int
    output_shift_identity: int


def _prepare_smooth_step(node: Node, output_zero_point: int) -> SmoothStepParams | SmoothStepInt16Params:
    x, out = node.inputs[0], node.outputs[0]
    kind = need_dtype(node, x, ("int8", "int16"), "input")
    need_dtype(node, out, (kind,), "output")
    if kind == "int16":
        return prepare_smooth_step_int16(node)
    input_scale, input_zero_point = per_tensor(node, x, "input")
    need_zero_point(node, out, per_tensor(node, out, "output")[1], output_zero_point, "output")
    multiplier, shift = fp.frexp_multiplier(float(input_scale) * float(1 << (31 - INPUT_INTEGER_BITS)))
    radius = fp.calculate_input_radius(INPUT_INTEGER_BITS, shift, 31)
    return SmoothStepParams(input_zero_point, multiplier, shift, radius)


def _smooth_step(x: np.ndarray, params: SmoothStepParams, function, output_bits: int,
                 output_offset: int) -> np.ndarray:
    difference = x.astype(np.int64) - params.input_zero_point
    inside = np.clip(difference, -params.input_range_radius + 1, params.input_range_radius - 1)
    in_q4 = fp.multiply_by_quantized_multiplier(inside, params.input_multiplier, params.input_left_shift)
    out_q0 = function(in_q4, INPUT_INTEGER_BITS)
    result = fp.rounding_divide_by_pot(out_q0, 31 - output_bits) + output_offset
    result = np.where(difference <= -params.input_range_radius, -128,
                      np.where(difference >= params.input_range_radius, 127, result))
    return clamp_to(result, -128, 127, np.int8)


@int_kernel("Sigmoid", prepare=lambda node: _prepare_smooth_step(node, -128))
def sigmoid(node: Node, params: SmoothStepParams, inputs: list) -> list[np.ndarray]:
    if isinstance(params, SmoothStepInt16Params):
        return [sigmoid_int16(inputs[0], params)]
    return [_smooth_step(inputs[0], params, fp.logistic, 8, -128)]


@int_kernel("Tanh", prepare=lambda node: _prepare_smooth_step(node, 0))
def tanh(node: Node, params: SmoothStepParams, inputs: list) -> list[np.ndarray]:
    if isinstance(params, SmoothStepInt16Params):
        return [tanh_int16(inputs[0], params)]
    return [_smooth_step(inputs[0], params, fp.tanh, 7, 0)]


def prepare_hard_swish(node: Node) -> HardSwishParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8",), "input")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    hires_input_scale = np.float32(1.0 / 128.0) * input_scale  # float32 math, as TFLM
    output_multiplier, output_exponent = fp.quantize_multiplier(float(hires_input_scale / output_scale))
    reluish_multiplier, reluish_exponent = fp.quantize_multiplier(
        float(hires_input_scale / np.float32(3.0 / 32768.0)))
    if output_exponent > 0:
        raise UnsupportedError(f"{where(node)}: output scale is more than 128x smaller than the "
                               "input scale; TFLite's HardSwish requires output exponent <= 0")
    return HardSwishParams(input_zero_point, output_zero_point,
                           fp.down_scale_int32_to_int16_multiplier(output_multiplier), output_exponent,
                           fp.down_scale_int32_to_int16_multiplier(reluish_multiplier),
                           reluish_exponent)


@int_kernel("HardSwish", prepare=prepare_hard_swish)
def hard_swish(node: Node, params: HardSwishParams, inputs: list) -> list[np.ndarray]:
    hires = fp.wrap_int16((inputs[0].astype(np.int64) - params.input_zero_point) * 128)
    preshift_output = fp.saturating_rounding_doubling_high_mul_int16(
        hires, params.output_multiplier_fixedpoint_int16)
    reluish, exponent = hires, params.reluish_multiplier_exponent
    if exponent > 0:
        reluish = fp.saturating_left_shift_int16(reluish, exponent - 1)
    reluish = fp.saturating_rounding_doubling_high_mul_int16(
        reluish, params.reluish_multiplier_fixedpoint_int16)
    if exponent > 0:
        reluish = fp.saturating_left_shift_int16(reluish, 1)
    if exponent < 0:
        reluish = fp.rounding_divide_by_pot(reluish, -exponent)
    reluish = (reluish + (1 << 15)) >> 1
    output = fp.saturating_doubling_high_mul_int16(reluish, preshift_output)
    output = fp.rounding_divide_by_pot(output, -params.output_multiplier_exponent)
    output = fp.wrap_int16(output + params.output_zero_point)
    return [clamp_to(output, -128, 127, np.int8)]


def prepare_leaky_relu(node: Node) -> LeakyReluParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8", "int16"), "input")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    alpha = np.float32(node.attrs["alpha"])
    alpha_multiplier, alpha_shift = fp.quantize_multiplier(float(input_scale * alpha / output_scale))
    identity_multiplier, identity_shift = fp.quantize_multiplier(float(input_scale / output_scale))
    return LeakyReluParams(input_zero_point, output_zero_point, alpha_multiplier, alpha_shift,
                           identity_multiplier, identity_shift)


@int_kernel("LeakyRelu", prepare=prepare_leaky_relu)
def leaky_relu(node: Node, params: LeakyReluParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    difference = x.astype(np.int64) - params.input_zero_point
    positive = difference >= 0
    multiplier = np.where(positive, params.output_multiplier_identity, params.output_multiplier_alpha)
    shift = np.where(positive, params.output_shift_identity, params.output_shift_alpha)
    result = fp.multiply_by_quantized_multiplier(difference, multiplier, shift) + params.output_zero_point
    info = np.iinfo(x.dtype)
    return [clamp_to(result, int(info.min), int(info.max), x.dtype)]
