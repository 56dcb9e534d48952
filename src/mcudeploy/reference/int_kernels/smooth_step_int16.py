"""Integer Sigmoid (LOGISTIC) and Tanh on int16, as TFLite Micro computes them: a 256-entry
table of ``sigmoid(i / 24)`` in Q0.16 with linear interpolation (``tanh(x) = 2 sigmoid(2x) - 1``).

Prepare (zero points 0, output scale 2^-15): the input is rescaled to ``x * 3 * 2^12 * s_in``
(so +/-2^17 spans +/-10.7). ``log2(s_in)`` rounded is ``k``; when ``s_in`` is a power of two
(``|log2 s_in - k| < 1e-3``, float32) with ``12 + k == 0`` (Tanh also ``== 1``), the rescale
is ``x * (3 << (12 + k))``; otherwise ``m = s_in * 12288`` is doubled ``n`` times while
``m <= 32767 / 2`` (and ``n <= 30``), truncated to an int, and the rescale is
``(x * m + 2^(n-1)) >> n`` (no rounding term when ``n == 0``).

Eval, with ``v`` the rescaled input and ``a = |v|``::

    Sigmoid: i = a >> 9, f = a & 511;  r = (T[i] << 9) + f (T[i+1] - T[i])   (r = 0x7FFF << 10 if i >= 255)
             Y = (r + 2^9) >> 10 if v >= 0 else (2^25 - r + 2^9 - 1) >> 10
    Tanh:    i = a >> 8, f = a & 255;  r = (T[i] << 8) + f (T[i+1] - T[i])   (r = 0xFFFF << 8 if i >= 255)
             Y = (r - 2^23 + 2^7) >> 8 if v >= 0 else (-r + 2^23 + 2^7 - 1) >> 8   (arithmetic shift)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import need_zero_point, per_tensor, where

# sigmoid(i / 24) in Q0.16 for i = 0..255: the numbers of ``sigmoid_table_uint16`` in
# tensorflow/lite/kernels/internal/common.h of github.com/tensorflow/tflite-micro (commit
# 006a71b994ad35da2f827de8aa33e310bbf62ad3). TFLM's rounding of them is not reproducible from
# the formula, so they are taken as data. The C runtime holds the same numbers
# (runtime/src/smooth_step_s16.c); tests/test_runtime_c.py checks both agree.
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432,
    42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475,
    49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485,
    55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519,
    59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036,
    62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405,
    64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179,
    65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337,
    65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517,
    65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533,
    65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535], dtype=np.int64)

INPUT_INTEGER_BITS = 3          # the rescaled input is Q3.12 times 3
OUTPUT_FRACTIONAL_BITS = 15     # output scale 2^-15
MAX_INPUT_MULTIPLIER = 65535    # |x| * multiplier must fit int32


@dataclass(frozen=True)
class SmoothStepInt16Params:
    input_multiplier: int   # the power-of-two case already folded in: 3 << (12 + k)
    input_left_shift: int   # right shift of the rescale (TFLM's name), 0..31


def checked_log2(x: float) -> tuple[int, bool]:
    """TFLite ``CheckedLog2`` in float32: ``(round(log2 x), |log2 x - round| < 1e-3)``."""
    value = np.float32(np.log(np.float32(x))) * (np.float32(1.0) / np.float32(np.log(np.float32(2.0))))
    rounded = np.float32(fp.round_half_away(value))
    return int(rounded), bool(abs(np.float32(value - rounded)) < np.float32(1e-3))


def input_rescale(input_scale: float, power_of_two_shifts: tuple[int, ...]) -> tuple[int, int]:
    """``(multiplier, right shift)`` that map the input to TFLM's table scale 1 / (3 * 2^12)."""
    log2_scale, power_of_two = checked_log2(input_scale)
    shift = (15 - INPUT_INTEGER_BITS) + log2_scale
    if power_of_two and shift in power_of_two_shifts:
        return 3 << shift, 0
    multiplier, shift = float(input_scale) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def prepare_smooth_step_int16(node: Node) -> SmoothStepInt16Params:
    x, out = node.inputs[0], node.outputs[0]
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    need_zero_point(node, x, input_zero_point, 0, "input")
    need_zero_point(node, out, output_zero_point, 0, "output")
    log2_output, power_of_two = checked_log2(float(output_scale))
    if not power_of_two or log2_output != -OUTPUT_FRACTIONAL_BITS:
        raise UnsupportedError(f"{where(node)}: int16 {node.op} output {out.name!r} must have scale "
                               f"2^-15 (TFLite's int16 scheme), got {float(output_scale)}")
    multiplier, shift = input_rescale(float(input_scale), (0,) if node.op == "Sigmoid" else (0, 1))
    if multiplier > MAX_INPUT_MULTIPLIER:
        raise UnsupportedError(f"{where(node)}: int16 {node.op} input scale {float(input_scale)} is too "
                               "large (TFLM's rescale overflows int32 above 5.33); requantize the input")
    return SmoothStepInt16Params(multiplier, shift)


def _rescaled(x: np.ndarray, params: SmoothStepInt16Params) -> np.ndarray:
    shift = params.input_left_shift
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    return (x.astype(np.int64) * params.input_multiplier + rounding) >> shift


def _interpolate(absolute: np.ndarray, fraction_bits: int, saturated_value: int) -> np.ndarray:
    index = absolute >> fraction_bits
    saturated = index >= 255
    index = np.minimum(index, 254)
    low, high = SIGMOID_TABLE[index], SIGMOID_TABLE[index + 1]
    fraction = absolute & ((1 << fraction_bits) - 1)
    return np.where(saturated, saturated_value, (low << fraction_bits) + fraction * (high - low))


def sigmoid_int16(x: np.ndarray, params: SmoothStepInt16Params) -> np.ndarray:
    value = _rescaled(x, params)
    result = _interpolate(np.abs(value), 9, 0x7FFF << 10)
    result = np.where(value >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1) >> 10
    return fp.wrap_int16(result).astype(np.int16)


def tanh_int16(x: np.ndarray, params: SmoothStepInt16Params) -> np.ndarray:
    value = _rescaled(x, params)
    result = _interpolate(np.abs(value), 8, 0xFFFF << 8)
    result = np.where(value >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1) >> 8
    return fp.wrap_int16(result).astype(np.int16)
