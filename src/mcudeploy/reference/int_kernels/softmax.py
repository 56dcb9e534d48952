"""Integer Softmax over the last axis (TFLM): int8 input with int8 or int16 output uses
``reference_ops::Softmax`` (gemmlowp fixed point, no lookup table); int16 uses
``SoftmaxInt16`` with two 513-entry lookup tables (see ``softmax_int16``).

Prepare: ``m, s = preprocess_softmax_scaling(beta, s_in, 5)`` (Q5.26 input differences),
``diff_min = -calculate_input_radius(5, s)``. Output must be int8 (zp -128, scale 1/256) or
int16 (zp -32768, scale 1/65536).

Eval, per row::

    d      = X - max(X)                                  (<= 0)
    e      = exp_on_negative_values(mbqm(d, m, s), 5)    (Q0.31) where d >= diff_min
    total  = sum rdbpot(e, 12)                           (Q12.19)
    r, k   = get_reciprocal(total, 12)                   (1/total = r * 2^-k)
    Y      = clamp(rdbpot(srdhm(r, e), k + 31 - bits) + dtype_min)   where d >= diff_min
           = dtype_min                                                otherwise
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import clamp_to, need_dtype, per_tensor, where
from .registry import int_kernel

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12
OUTPUT_QUANTIZATION = {"int8": (-128, 1.0 / 256), "int16": (-32768, 1.0 / 65536)}


@dataclass(frozen=True)
class SoftmaxParams:
    """Prepared parameters of an int8 softmax."""
    input_multiplier: int
    input_left_shift: int
    diff_min: int


def prepare_softmax(node: Node) -> SoftmaxParams | SoftmaxInt16Params:
    x, out = node.inputs[0], node.outputs[0]
    kind = need_dtype(node, x, ("int8", "int16"), "input")
    if kind == "int16":
        return prepare_softmax_int16(node)
    out_kind = need_dtype(node, out, ("int8", "int16"), "output")
    if node.attrs["axis"] % x.rank != x.rank - 1:
        raise UnsupportedError(f"{where(node)}: integer Softmax runs over the last axis only "
                               f"(axis is {node.attrs['axis']})")
    input_scale, _ = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    zero_point, scale = OUTPUT_QUANTIZATION[out_kind]
    if output_zero_point != zero_point or abs(float(output_scale) - scale) > 0.001 * scale:
        raise UnsupportedError(f"{where(node)}: {out_kind} Softmax output must have zero point "
                               f"{zero_point} and scale {scale} (TFLite's fixed output quantization), "
                               f"got {output_zero_point} and {float(output_scale)}")
    multiplier, shift = fp.preprocess_softmax_scaling(node.attrs["beta"], float(input_scale),
                                                      SCALED_DIFF_INTEGER_BITS)
    radius = fp.calculate_input_radius(SCALED_DIFF_INTEGER_BITS, shift)
    return SoftmaxParams(multiplier, shift, -radius)


@dataclass(frozen=True)
class SoftmaxInt16Params:
    """Prepared parameters of an int16 softmax."""
    input_multiplier: int
    input_left_shift: int
    exp_lut: np.ndarray                    # int16[513], exp on [-10, 0]
    one_over_one_plus_x_lut: np.ndarray    # int16[513], 1 / (1 + x) on [0, 1]


def prepare_softmax_int16(node: Node) -> SoftmaxInt16Params:
    """TFLM int16 Softmax: zero points 0, output scale 1/32768; the input difference is
    rescaled so that [-65535, 0] covers [-10, 0]: ``quantize_multiplier(s_in * beta / (10 / 65535))``."""
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, out, ("int16",), "output")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    if node.attrs["axis"] % x.rank != x.rank - 1 or input_zero_point or output_zero_point \
            or abs(float(output_scale) - 1 / 32768) > 0.001 / 32768:
        raise UnsupportedError(f"{where(node)}: int16 Softmax needs the last axis, zero points 0 "
                               "and output scale 1/32768 (TFLite's int16 scheme)")
    multiplier, shift = fp.quantize_multiplier(float(input_scale) * float(node.attrs["beta"])
                                               / (10.0 / 65535.0))
    span = np.float32(65535)
    exp_lut = fp.lut_populate_int16(np.exp, np.float32(10.0) / span, 32767,
                                    np.float32(2.0) / span, 0)
    reciprocal_lut = fp.lut_populate_int16(lambda v: np.float32(1) / (np.float32(1) + v),
                                           np.float32(1.0) / span, -32768, np.float32(2.0) / span, 0)
    return SoftmaxInt16Params(multiplier, shift, exp_lut, reciprocal_lut)


def softmax_int16(x: np.ndarray, params: SoftmaxInt16Params) -> np.ndarray:
    """TFLM ``SoftmaxInt16``: ``e = lut_exp(clamp(mbqm(x - max) + 32767))`` (Q0.15), the sum's
    reciprocal from ``lut_1/(1+x)`` after normalising it to [1, 2), then
    ``clamp((e * reciprocal + 2^(r-1)) >> r, 0, 32767)`` with ``r = 31 - clz(sum)``."""
    difference = x.astype(np.int64) - x.max(axis=-1, keepdims=True)
    scaled = fp.multiply_by_quantized_multiplier(difference, params.input_multiplier,
                                                 params.input_left_shift)
    exps = fp.lut_lookup_int16(np.clip(scaled + 32767, -32768, 32767), params.exp_lut)
    total = exps.sum(axis=-1, keepdims=True)
    headroom_plus_one = fp.count_leading_zeros_32(total)
    shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    reciprocal = fp.lut_lookup_int16(np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767),
                                     params.one_over_one_plus_x_lut)
    right_shift = 31 - headroom_plus_one
    result = (exps * reciprocal + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(result, 0, 32767).astype(np.int16)


@int_kernel("Softmax", prepare=prepare_softmax)
def softmax(node: Node, params, inputs: list) -> list[np.ndarray]:
    if isinstance(params, SoftmaxInt16Params):
        return [softmax_int16(inputs[0], params)]
    x = inputs[0].astype(np.int64)
    out_dtype = node.outputs[0].dtype.numpy
    difference = x - x.max(axis=-1, keepdims=True)
    used = difference >= params.diff_min
    rescaled = fp.multiply_by_quantized_multiplier_greater_than_one(
        np.where(used, difference, 0), params.input_multiplier, params.input_left_shift)
    exps = fp.exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    # Rescale<12> of a Q0.31 value: divide by 2^12 with rounding
    accumulated = np.where(used, fp.rounding_divide_by_pot(exps, ACCUMULATION_INTEGER_BITS), 0)
    total = fp.wrap_int32(accumulated.sum(axis=-1, keepdims=True))
    reciprocal, bits_over_unit = fp.get_reciprocal(total, ACCUMULATION_INTEGER_BITS)
    bits = 8 * out_dtype.itemsize
    info = np.iinfo(out_dtype)
    unsaturated = fp.rounding_divide_by_pot(
        fp.saturating_rounding_doubling_high_mul(reciprocal, exps), bits_over_unit + 31 - bits)
    result = np.where(used, unsaturated + int(info.min), int(info.min))
    return [clamp_to(result, int(info.min), int(info.max), out_dtype)]
