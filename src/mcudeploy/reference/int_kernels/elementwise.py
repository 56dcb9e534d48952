"""Integer Add, Sub and Mul with broadcasting, int8 and int16 (TFLite / TFLM semantics).

Add / Sub prepare (``left_shift`` = 20 for int8, 15 for int16)::

    twice_max = 2 * max(s1, s2)
    m1, sh1 = qm_smaller_than_one(s1 / twice_max);  m2, sh2 = ... (s2 / twice_max)
    mo, sho = qm_smaller_than_one(twice_max / (2^left_shift * s_out))

computed in double for both. (tflite-micro's ``sub_common.cc`` at commit 90b983c2 computes
Sub's in float32; the installed TFLM wheel, 0.dev20261023, uses double: 3 of the 5 seanet
SUB goldens differ in 1-2 outputs with float32 and all match with double.)
Eval::

    a = mbqm((A - zp1) << left_shift, m1, sh1);   b = mbqm((B - zp2) << left_shift, m2, sh2)
    Y = clamp(mbqm(a +/- b, mo, sho) + zp_out, min, max)

Mul: ``m, sh = quantize_multiplier(double(s1) * double(s2) / double(s_out))``,
``Y = clamp(mbqm((A - zp1) * (B - zp2), m, sh) + zp_out, min, max)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...ir import Node
from ._common import activation_range, align_ranks, clamp_to, need_dtype, need_zero_point, per_tensor
from .registry import int_kernel


@dataclass(frozen=True)
class AddParams:
    left_shift: int
    input1_offset: int
    input2_offset: int
    output_offset: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int


@dataclass(frozen=True)
class MulParams:
    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    activation_min: int
    activation_max: int


def _operands(node: Node):
    kind = need_dtype(node, node.inputs[0], ("int8", "int16"), "input A")
    need_dtype(node, node.inputs[1], (kind,), "input B")
    first = per_tensor(node, node.inputs[0], "input A")
    second = per_tensor(node, node.inputs[1], "input B")
    out = per_tensor(node, node.outputs[0], "output")
    return kind, first, second, out


def _add_multipliers(s1, s2, s_out, left_shift: int):
    twice_max = 2.0 * float(max(s1, s2))
    reals = (float(s1) / twice_max, float(s2) / twice_max,
             twice_max / ((1 << left_shift) * float(s_out)))
    return [fp.quantize_multiplier_smaller_than_one_exp(r) for r in reals]


def prepare_add(node: Node) -> AddParams:
    kind, (s1, zp1), (s2, zp2), (s_out, zp_out) = _operands(node)
    left_shift = 15 if kind == "int16" else 20
    (m1, sh1), (m2, sh2), (mo, sho) = _add_multipliers(s1, s2, s_out, left_shift)
    low, high = activation_range(node)
    return AddParams(left_shift, -zp1, -zp2, zp_out, m1, sh1, m2, sh2, mo, sho, low, high)


def _add_or_sub(node: Node, params: AddParams, inputs: list, sign: int) -> list[np.ndarray]:
    def scaled(values, offset, multiplier, shift):
        shifted = fp.wrap_int32((values.astype(np.int64) + offset) << params.left_shift)
        return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, multiplier, shift)

    first, second = align_ranks(inputs[0], inputs[1])
    a = scaled(first, params.input1_offset, params.input1_multiplier, params.input1_shift)
    b = scaled(second, params.input2_offset, params.input2_multiplier, params.input2_shift)
    raw = fp.wrap_int32(a + sign * b)
    result = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(
        raw, params.output_multiplier, params.output_shift) + params.output_offset
    return [clamp_to(result, params.activation_min, params.activation_max, node.outputs[0].dtype.numpy)]


@int_kernel("Add", prepare=prepare_add)
def add(node: Node, params: AddParams, inputs: list) -> list[np.ndarray]:
    return _add_or_sub(node, params, inputs, +1)


@int_kernel("Sub", prepare=prepare_add)
def sub(node: Node, params: AddParams, inputs: list) -> list[np.ndarray]:
    return _add_or_sub(node, params, inputs, -1)


def prepare_mul(node: Node) -> MulParams:
    kind, (s1, zp1), (s2, zp2), (s_out, zp_out) = _operands(node)
    if kind == "int16":
        for value, zp, role in ((node.inputs[0], zp1, "input A"), (node.inputs[1], zp2, "input B"),
                                (node.outputs[0], zp_out, "output")):
            need_zero_point(node, value, zp, 0, f"int16 {role}")
    multiplier, shift = fp.quantize_multiplier(float(s1) * float(s2) / float(s_out))
    low, high = activation_range(node)
    return MulParams(-zp1, -zp2, zp_out, multiplier, shift, low, high)


@int_kernel("Mul", prepare=prepare_mul)
def mul(node: Node, params: MulParams, inputs: list) -> list[np.ndarray]:
    first, second = align_ranks(inputs[0], inputs[1])
    product = fp.wrap_int32((first.astype(np.int64) + params.input1_offset)
                            * (second.astype(np.int64) + params.input2_offset))
    result = fp.multiply_by_quantized_multiplier(product, params.output_multiplier,
                                                 params.output_shift) + params.output_offset
    return [clamp_to(result, params.activation_min, params.activation_max, node.outputs[0].dtype.numpy)]
