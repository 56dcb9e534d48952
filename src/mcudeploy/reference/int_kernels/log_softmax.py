"""Integer LogSoftmax over the last axis, int8 (TFLite Micro ``log_softmax.cc``, TFLite
``reference_ops::LogSoftmaxQuantized``). The output is fixed: scale 16/256, zero point 127.

Prepare (``PreprocessLogSoftmaxScalingExp``, beta 1, 5 integer bits for the differences)::

    m, ls  = quantize_multiplier_greater_than_one(min(s_in * 2^26, 2^31 - 1))
    rd, rs = qm_smaller_than_one(2^(31 - ls) / m)          (the inverse scaling, rs <= 0)
    diff_min = -calculate_input_radius(5, ls)

Eval, per row (``d = X - max(row)``, gemmlowp fixed point)::

    q5   = mbqm(d, m, ls)                                   (Q5.26)
    sum  = sum over d >= diff_min of rdbpot(exp_on_negative_values(q5), 12)      (Q12.19)
    L    = log_x_for_x_greater_than_or_equal_to_1(sum)      (Q5.26, TFLite common.h)
    cut  = max(diff_min - 1, mbqm(wrap32(L + INT32_MIN), rd, rs))
    Y    = clamp(rdbpot(q5 - L, 22) + 127, -128, 127) where d > cut, else -128
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import need_dtype, per_tensor, where
from .registry import int_kernel

OUTPUT_SCALE, OUTPUT_ZERO_POINT = np.float32(16 / 256), 127
DIFF_INTEGER_BITS, SUM_INTEGER_BITS = 5, 12
INT32_MIN = -(2**31)
# gemmlowp Q0.31 constants of log_x_for_x_greater_than_or_equal_to_1 (TFLite common.h)
LOG_2, SQRT_SQRT_HALF, SQRT_HALF, ONE_QUARTER = 1488522236, 1805811301, 1518500250, 536870912
ALPHA_N, ALPHA_D, ALPHA_I, ALPHA_F = 117049297, 127690142, 1057819769, 638450708


@dataclass(frozen=True)
class LogSoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    reverse_scaling_divisor: int
    reverse_scaling_shift: int   # <= 0 (TFLM stores its negation as a right shift)
    diff_min: int


def prepare_log_softmax(node: Node) -> LogSoftmaxParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8",), "input")
    need_dtype(node, out, ("int8",), "output")
    if node.attrs["axis"] % x.rank != x.rank - 1:
        raise UnsupportedError(f"{where(node)}: the integer LogSoftmax works on the last axis only "
                               f"(axis {node.attrs['axis']} of {x.type_str()})")
    if per_tensor(node, out, "output") != (OUTPUT_SCALE, OUTPUT_ZERO_POINT):
        raise UnsupportedError(f"{where(node)}: TFLite's int8 LOG_SOFTMAX needs output scale 16/256 "
                               f"and zero point 127, got {per_tensor(node, out, 'output')}")
    input_scale, _ = per_tensor(node, x, "input")
    multiplier, left_shift = fp.preprocess_softmax_scaling(1.0, float(input_scale), DIFF_INTEGER_BITS)
    divisor, shift = fp.quantize_multiplier_smaller_than_one_exp(float(1 << (31 - left_shift)) / multiplier)
    return LogSoftmaxParams(multiplier, left_shift, divisor, shift,
                            -fp.calculate_input_radius(DIFF_INTEGER_BITS, left_shift))


def _rounding_half_sum(a, b) -> np.ndarray:
    total = np.asarray(a, np.int64) + b
    return fp.truncating_divide(total + np.where(total >= 0, 1, -1), 2)


def _saturate32(x) -> np.ndarray:
    return np.clip(x, INT32_MIN, 2**31 - 1)


def log_x_for_x_at_least_one(z: np.ndarray, input_bits: int = SUM_INTEGER_BITS,
                             output_bits: int = DIFF_INTEGER_BITS) -> np.ndarray:
    """TFLite ``log_x_for_x_greater_than_or_equal_to_1_impl``: raw Q(input_bits) ``z >= 1``
    -> raw Q(output_bits) ``ln z``; accumulated with one extra integer bit."""
    srdhm, shift_left = fp.saturating_rounding_doubling_high_mul, fp.saturating_rounding_multiply_by_pot
    accum_bits = output_bits + 1
    z = np.asarray(z, np.int64)
    quarter = fp.rounding_divide_by_pot(np.int64(ONE_QUARTER), accum_bits)
    headroom_a = fp.count_leading_zeros_32(z)
    r_a = _shift_left_each(srdhm(_shift_left_each(z, headroom_a - 1), SQRT_HALF), 1)
    power_a = _saturate32(_shift_left_each(input_bits - headroom_a, 31 - accum_bits) + quarter)
    headroom_b = fp.count_leading_zeros_32(srdhm(z, SQRT_HALF)) - 1
    r_b = _shift_left_each(z, headroom_b)
    power_b = _saturate32(_shift_left_each(input_bits - headroom_b, 31 - accum_bits) - quarter)
    r, power = np.minimum(r_a, r_b), np.maximum(power_a, power_b)
    p = _rounding_half_sum(r, SQRT_SQRT_HALF)
    q = fp.wrap_int32(2 * fp.wrap_int32(r - SQRT_SQRT_HALF))
    square = srdhm(q, q)
    numerator = fp.wrap_int32(srdhm(q, r) + srdhm(srdhm(q, square), ALPHA_N))
    denominator_minus_one = fp.wrap_int32(
        srdhm(p, fp.wrap_int32(fp.wrap_int32(ALPHA_I + q) + srdhm(ALPHA_D, square))) + srdhm(ALPHA_F, q))
    reciprocal = fp.one_over_one_plus_x_for_x_in_0_1(denominator_minus_one)
    scaled = fp.rounding_divide_by_pot(numerator, accum_bits)
    total = fp.wrap_int32(srdhm(power, LOG_2) + srdhm(scaled, reciprocal))
    return shift_left(total, accum_bits - output_bits)


def _shift_left_each(x, exponents) -> np.ndarray:
    """Saturating left shift of each ``x`` by its own non-negative exponent (TFLite
    ``SaturatingRoundingMultiplyByPOTParam``)."""
    x, exponents = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(exponents, np.int64))
    result = np.empty(x.shape, np.int64)
    for exponent in np.unique(exponents):
        chosen = exponents == exponent
        result[chosen] = fp.saturating_rounding_multiply_by_pot(x[chosen], int(exponent))
    return result


@int_kernel("LogSoftmax", prepare=prepare_log_softmax)
def log_softmax(node: Node, params: LogSoftmaxParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    difference = x.astype(np.int64) - x.max(axis=-1, keepdims=True)
    q5 = fp.multiply_by_quantized_multiplier(difference, params.input_multiplier, params.input_left_shift)
    exps = fp.rounding_divide_by_pot(fp.exp_on_negative_values(q5, DIFF_INTEGER_BITS), SUM_INTEGER_BITS)
    total = fp.wrap_int32(np.where(difference >= params.diff_min, exps, 0).sum(axis=-1, keepdims=True))
    log_sum = log_x_for_x_at_least_one(total)
    cut = np.maximum(params.diff_min - 1, fp.multiply_by_quantized_multiplier(
        fp.wrap_int32(log_sum + INT32_MIN), params.reverse_scaling_divisor, params.reverse_scaling_shift))
    shifted = fp.rounding_divide_by_pot(fp.wrap_int32(q5 - log_sum), 31 - DIFF_INTEGER_BITS - 4)
    result = np.where(difference > cut, np.clip(shifted + OUTPUT_ZERO_POINT, -128, 127), -128)
    return [result.astype(np.int8)]
