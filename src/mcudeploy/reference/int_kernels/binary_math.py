"""Integer Max / Min (TFLite MAXIMUM / MINIMUM) and SquaredDifference, int8 and int16,
with broadcasting (TFLite Micro's arithmetic).

Max / Min compare the raw integers, so A, B and Y must share scale and zero point (the
TFLite converter always gives them one; prepare refuses anything else).

SquaredDifference (TFLM ``squared_difference.cc``), ``ls`` = 7 for int8, 0 for int16 (zero
points 0)::

    twice_max = 2 * max(s1, s2)                          (double)
    m1, e1 = qm_smaller_than_one(s1 / twice_max);   m2, e2 likewise
    mo, eo = quantize_multiplier(twice_max^2 / (2^(2 ls) * s_out))
    a = mbqm((A - zp1) << ls, m1, e1);  b = mbqm((B - zp2) << ls, m2, e2)
    Y = clamp(mbqm((a - b)^2, mo, eo) + zp_out, type range)
"""
from __future__ import annotations

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import align_ranks, clamp_to, need_dtype, need_zero_point, per_tensor, where
from .elementwise import AddParams
from .registry import int_kernel


def prepare_same_params(node: Node) -> None:
    """Max / Min: int8 or int16, one scale and zero point for every operand."""
    kind = need_dtype(node, node.inputs[0], ("int8", "int16"), "input A")
    need_dtype(node, node.inputs[1], (kind,), "input B")
    params = {per_tensor(node, value, role) for value, role in
              ((node.inputs[0], "input A"), (node.inputs[1], "input B"), (node.outputs[0], "output"))}
    if len(params) != 1:
        raise UnsupportedError(f"{where(node)}: TFLite's integer {node.op} compares raw integers, so "
                               "both inputs and the output must share scale and zero point; they "
                               f"differ ({sorted(params)})")
    return None


def _max_or_min(node: Node, params, inputs: list) -> list[np.ndarray]:
    first, second = align_ranks(inputs[0], inputs[1])
    return [(np.maximum if node.op == "Max" else np.minimum)(first, second)]


int_kernel("Max", prepare=prepare_same_params)(_max_or_min)
int_kernel("Min", prepare=prepare_same_params)(_max_or_min)


def prepare_squared_difference(node: Node) -> AddParams:
    """Add's parameter record (the C kernel takes ``mcu_add_quant``); the clamp is the
    output type's range."""
    kind = need_dtype(node, node.inputs[0], ("int8", "int16"), "input A")
    need_dtype(node, node.inputs[1], (kind,), "input B")
    (s1, zp1), (s2, zp2) = per_tensor(node, node.inputs[0], "input A"), per_tensor(node, node.inputs[1], "input B")
    s_out, zp_out = per_tensor(node, node.outputs[0], "output")
    left_shift = 7 if kind == "int8" else 0
    if kind == "int16":
        for value, zero_point, role in ((node.inputs[0], zp1, "input A"), (node.inputs[1], zp2, "input B"),
                                        (node.outputs[0], zp_out, "output")):
            need_zero_point(node, value, zero_point, 0, f"int16 {role}")
    twice_max = 2.0 * float(max(s1, s2))
    m1, e1 = fp.quantize_multiplier_smaller_than_one_exp(float(s1) / twice_max)
    m2, e2 = fp.quantize_multiplier_smaller_than_one_exp(float(s2) / twice_max)
    mo, eo = fp.quantize_multiplier(twice_max * twice_max / float(np.float32(1 << (2 * left_shift)) * s_out))
    info = np.iinfo(node.outputs[0].dtype.numpy)
    return AddParams(left_shift, -zp1, -zp2, zp_out, m1, e1, m2, e2, mo, eo, int(info.min), int(info.max))


@int_kernel("SquaredDifference", prepare=prepare_squared_difference)
def squared_difference(node: Node, params: AddParams, inputs: list) -> list[np.ndarray]:
    def scaled(values, offset, multiplier, shift):
        shifted = (values.astype(np.int64) + offset) << params.left_shift
        return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, multiplier, shift)

    first, second = align_ranks(inputs[0], inputs[1])
    a = scaled(first, params.input1_offset, params.input1_multiplier, params.input1_shift)
    b = scaled(second, params.input2_offset, params.input2_multiplier, params.input2_shift)
    square = fp.wrap_int32((a - b) * (a - b))
    result = fp.multiply_by_quantized_multiplier(square, params.output_multiplier,
                                                 params.output_shift) + params.output_offset
    return [clamp_to(result, params.activation_min, params.activation_max, node.outputs[0].dtype.numpy)]
