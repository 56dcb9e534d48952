"""Fixed-point requantization arithmetic: the integer spec the C runtime mirrors bit for bit.

Every function takes and returns numpy arrays (or Python ints) and computes in int64, so a
whole batch is processed at once; results are exactly what TensorFlow Lite Micro's
reference kernels compute in 32-bit C (wrap-around where C wraps, saturation where
gemmlowp saturates). Names follow TFLite / gemmlowp so the C code can be checked line by
line against this file.

Real multipliers become a Q0.31 significand and a power-of-two exponent::

    real = multiplier * 2^(shift - 31),   multiplier in [2^30, 2^31),  shift in [-31, 30]

(``quantize_multiplier``: ``frexp`` then round-half-away of ``q * 2^31``; ``q == 1`` after
rounding becomes ``2^30`` with ``shift + 1``; ``shift < -31`` flushes to zero).

Requantizing an int32 accumulator ``x`` (TFLM's default build, "double rounding")::

    srdhm(a, b)  = trunc((a*b + (a*b >= 0 ? 2^30 : 1 - 2^30)) / 2^31)   (INT32_MIN^2 -> INT32_MAX)
    rdbpot(x, e) = floor(x / 2^e) + ((x mod 2^e) > 2^(e-1) - 1 + (x < 0))  (round half away)
    mbqm(x, m, s) = rdbpot(srdhm(wrap32(x * 2^max(s, 0)), m), max(-s, 0))

An int64 accumulator (16x8 conv / depthwise / transpose conv with int64 bias) uses instead
``m16 = (m + 2^15) >> 16`` (``0x7FFF`` when ``m >= 0x7FFF0000``) and one rounding:
``wrap32((x * m16 + 2^(14 - s)) >> (15 - s))``. ``TFLITE_SINGLE_ROUNDING`` builds (and
CMSIS-NN built with ``CMSIS_NN_USE_SINGLE_ROUNDING``) use
``(x * m + 2^(30 - s)) >> (31 - s)`` for int32 too. CMSIS-NN's double-rounding path equals
``mbqm`` except that ``INT32_MIN * INT32_MIN`` is not saturated.

Which form TFLM's reference kernels use (checked bit for bit against the TFLM wheel):

* int8 Conv / DepthwiseConv / FC / TransposeConv, Mul, Mean, requantizing Quantize,
  LeakyRelu: ``mbqm`` (int32, double rounding); Add / Sub: ``mbqm`` after ``x << 20``
  (int8) or ``x << 15`` (int16);
* 16x8 Conv / DepthwiseConv / FC with an int64 bias (or none), and every 16x8
  TransposeConv: ``multiply_by_quantized_multiplier_int64``; 16x8 Conv / FC with an int32
  bias: ``mbqm``.

The gemmlowp fixed-point helpers (``exp_on_negative_values``, ``logistic``, ``tanh``,
``one_over_one_plus_x_for_x_in_0_1``, ``get_reciprocal``) work on raw int32 values of a
``Q(integer_bits).(31 - integer_bits)`` format and are used by int8 Softmax, Logistic and
Tanh; the ``*_int16`` helpers serve HardSwish, and ``lut_populate_int16`` /
``lut_lookup_int16`` the int16 Softmax tables.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
ArrayLike = np.ndarray | np.generic | int | float


def _int64(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x: ArrayLike) -> np.ndarray:
    """Two's-complement wrap of int64 values to the int32 range (what C's int32 cast does)."""
    x = _int64(x)
    if x.size and (x.min() < INT32_MIN or x.max() > INT32_MAX):
        return ((x + 2**31) & 0xFFFFFFFF) - 2**31
    return x


def wrap_int16(x: ArrayLike) -> np.ndarray:
    """Two's-complement wrap to the int16 range."""
    return ((_int64(x) + 2**15) & 0xFFFF) - 2**15


def truncating_divide(x: ArrayLike, divisor: ArrayLike) -> np.ndarray:
    """C integer division (rounds toward zero), elementwise in int64."""
    x, divisor = _int64(x), _int64(divisor)
    quotient = np.abs(x) // np.abs(divisor)
    return np.where((x < 0) != (divisor < 0), -quotient, quotient)


def round_half_away(x: ArrayLike) -> np.ndarray:
    """C ``round`` / ``roundf`` (TFLite ``TfLiteRound``): halves round away from zero.
    Exact in the input's float dtype (float32 stays float32)."""
    x = np.asarray(x)
    whole = np.trunc(x)
    return whole + np.sign(x) * (np.abs(x - whole) >= 0.5)


# -- multipliers ---------------------------------------------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplier``: ``real ~= multiplier * 2^(shift - 31)``.

    ``q, shift = frexp(real)`` (``q`` in [0.5, 1)), ``multiplier = round_half_away(q * 2^31)``;
    a rounded ``2^31`` becomes ``2^30`` with ``shift + 1``; ``shift < -31`` gives ``(0, 0)``
    (flush to zero); ``real == 0`` gives ``(0, 0)``. Negative reals keep their sign in the
    multiplier (TFLite never passes one).
    """
    real = float(real)
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real):
        raise ValueError(f"multiplier {real!r} is not finite (a scale of zero or infinity upstream)")
    q, shift = math.frexp(real)
    fixed = int(round_half_away(q * 2.0**31))
    if abs(fixed) == 2**31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def quantize_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``quantize_multiplier`` of each element: int32 multipliers and int32 shifts.

    Vectorised (``np.frexp`` is exact like ``math.frexp``), so that a layer with thousands of
    channels costs one numpy pass; non-finite reals go through the scalar rule, which refuses
    them the same way.
    """
    reals = np.asarray(reals, dtype=np.float64)
    if not np.all(np.isfinite(reals)):
        pairs = [quantize_multiplier(r) for r in reals.ravel()]
        return (np.array([p[0] for p in pairs], np.int64).reshape(reals.shape).astype(np.int32),
                np.array([p[1] for p in pairs], np.int64).reshape(reals.shape).astype(np.int32))
    mantissa, shift = np.frexp(reals)
    fixed = round_half_away(mantissa * 2.0**31).astype(np.int64)
    full = np.abs(fixed) == 2**31
    fixed = np.where(full, fixed // 2, fixed)
    shift = np.where(full, shift + 1, shift).astype(np.int64)
    flush = (shift < -31) | (reals == 0.0)
    return np.where(flush, 0, fixed).astype(np.int32), np.where(flush, 0, shift).astype(np.int32)


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplierSmallerThanOneExp``: ``0 < real < 1``; shift <= 0."""
    if not 0.0 < real < 1.0:
        raise ValueError(f"multiplier {real!r} must be in (0, 1)")
    multiplier, shift = quantize_multiplier(real)
    assert shift <= 0
    return multiplier, shift


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """TFLite ``QuantizeMultiplierGreaterThanOne``: ``real > 1``; shift >= 0."""
    if not real > 1.0:
        raise ValueError(f"multiplier {real!r} must be > 1")
    return quantize_multiplier(real)


def down_scale_int32_to_int16_multiplier(multiplier: int) -> int:
    """TFLite ``DownScaleInt32ToInt16Multiplier``: Q0.31 -> Q0.15 with rounding,
    ``(m + 2^15) >> 16``, saturating to 32767 when ``m >= INT32_MAX - 2^15``."""
    if multiplier >= INT32_MAX - 2**15:
        return INT16_MAX
    return (multiplier + 2**15) >> 16


# -- int32 primitives -------------------------------------------------------------------
def saturating_rounding_doubling_high_mul(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingDoublingHighMul`` on int32 values:
    ``trunc((a*b + nudge) / 2^31)``, ``nudge = 2^30`` if ``a*b >= 0`` else ``1 - 2^30``;
    ``a == b == INT32_MIN`` saturates to ``INT32_MAX``.

    Both signs reduce to one floor shift, ``(a*b + 2^30) >> 31``: for ``v = a*b + 1 - 2^30 < 0``,
    ``trunc(v / 2^31) = floor((v + 2^31 - 1) / 2^31)``, and ``v + 2^31 - 1 = a*b + 2^30``.
    """
    a, b = _int64(a), _int64(b)
    high = a * b
    high += 2**30
    high >>= 31
    if np.any(b == INT32_MIN) and np.any(a == INT32_MIN):
        high = np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)
    return high


def rounding_divide_by_pot(x: ArrayLike, exponent: ArrayLike) -> np.ndarray:
    """gemmlowp ``RoundingDivideByPOT``: ``x / 2^exponent`` rounded half away from zero,
    ``exponent`` in [0, 31] (per element or broadcast).

    gemmlowp computes ``(x >> e) + ((x & mask) > (mask >> 1) + (x < 0))``; the same value is
    ``(x + 2^(e-1) - (x < 0)) >> e`` for ``e > 0`` and ``x`` for ``e == 0`` (``x >> 63`` is
    the ``-(x < 0)`` term).
    """
    x, exponent = _int64(x), _int64(exponent)
    if not np.any(exponent):
        return x
    result = x >> 63
    if not np.all(exponent > 0):
        result &= -(exponent > 0).astype(np.int64)
    result += x
    result += (np.int64(1) << exponent) >> 1
    result >>= exponent
    return result


def saturating_rounding_multiply_by_pot(x: ArrayLike, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp ``SaturatingRoundingMultiplyByPOT<exponent>`` on ``bits``-bit raw values:
    a saturating left shift for ``exponent > 0``, ``rounding_divide_by_pot`` for ``< 0``."""
    x = _int64(x)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    threshold = (1 << (bits - 1 - exponent)) - 1
    return np.where(x > threshold, high, np.where(x < -threshold, low, x << exponent))


def multiply_by_quantized_multiplier(x: ArrayLike, multiplier: ArrayLike,
                                     shift: ArrayLike) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplier(int32 x, ...)``, double rounding (TFLM default):
    ``rdbpot(srdhm(wrap32(x * 2^max(shift, 0)), multiplier), max(-shift, 0))``.
    ``shift`` and ``multiplier`` broadcast against ``x`` (per-channel requantization)."""
    shift = _int64(shift)
    x = _int64(x)
    if np.any(shift > 0):
        x = wrap_int32(x << np.maximum(shift, 0))
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier),
                                  np.maximum(-shift, 0))


def multiply_by_quantized_multiplier_int64(x: ArrayLike, multiplier: ArrayLike,
                                           shift: ArrayLike) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplier(int64 x, ...)`` (16x8 kernels with int64
    accumulators): ``m16 = m < 0x7FFF0000 ? (m + 2^15) >> 16 : 0x7FFF``, ``t = 15 - shift``,
    ``wrap32((x * m16 + 2^(t-1)) >> t)``. Valid for ``|x| < 2^47``, ``shift`` in [-31, 7]."""
    multiplier, shift = _int64(multiplier), _int64(shift)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + 2**15) >> 16, 0x7FFF)
    total_shift = 15 - shift
    rounded = _int64(x) * reduced + (np.int64(1) << (total_shift - 1))
    return wrap_int32(rounded >> total_shift)


def multiply_by_quantized_multiplier_single_rounding(x: ArrayLike, multiplier: ArrayLike,
                                                     shift: ArrayLike) -> np.ndarray:
    """``TFLITE_SINGLE_ROUNDING`` (and CMSIS-NN single-rounding) variant for int32 ``x``:
    ``(x * m + 2^(30 - shift)) >> (31 - shift)``, ``shift`` in [-31, 30]. Not what the TFLM
    Python package computes; kept so a C build with that flag can be checked."""
    total_shift = 31 - _int64(shift)
    rounded = _int64(x) * _int64(multiplier) + (np.int64(1) << (total_shift - 1))
    return rounded >> total_shift


def multiply_by_quantized_multiplier_smaller_than_one_exp(x: ArrayLike, multiplier: ArrayLike,
                                                          shift: ArrayLike) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` (shift <= 0):
    ``rdbpot(srdhm(x, m), -shift)`` (identical to ``multiply_by_quantized_multiplier``)."""
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -_int64(shift))


def multiply_by_quantized_multiplier_greater_than_one(x: ArrayLike, multiplier: ArrayLike,
                                                      left_shift: ArrayLike) -> np.ndarray:
    """TFLite ``MultiplyByQuantizedMultiplierGreaterThanOne``: ``srdhm(wrap32(x << s), m)``."""
    return saturating_rounding_doubling_high_mul(wrap_int32(_int64(x) << _int64(left_shift)),
                                                 multiplier)


# -- int16 primitives (HardSwish) ---------------------------------------------------------
def saturating_rounding_doubling_high_mul_int16(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp int16 ``SaturatingRoundingDoublingHighMul``:
    ``trunc((a*b + (a*b >= 0 ? 2^14 : 1 - 2^14)) / 2^15)``; ``a == b == -32768`` -> 32767."""
    a, b = _int64(a), _int64(b)
    product = a * b
    nudged = product + np.where(product >= 0, 2**14, 1 - 2**14)
    high = wrap_int16(truncating_divide(nudged, 2**15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, high)


def saturating_doubling_high_mul_int16(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """TFLite HardSwish's ``SaturatingDoublingHighMul``: ``trunc(a*b / 2^15)`` without
    rounding nudge; ``a == b == -32768`` -> 32767."""
    a, b = _int64(a), _int64(b)
    high = wrap_int16(truncating_divide(a * b, 2**15))
    return np.where((a == INT16_MIN) & (b == INT16_MIN), INT16_MAX, high)


def saturating_left_shift_int16(x: ArrayLike, amount: int) -> np.ndarray:
    """TFLite ``SaturatingLeftShift``: ``clamp(x * 2^amount, -32768, 32767)``."""
    return np.clip(_int64(x) << amount, INT16_MIN, INT16_MAX)


# -- gemmlowp fixed-point functions (raw int32 values, Q(integer_bits).(31 - integer_bits)) --
_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))  # Q0.31 of exp(-2^k)


def _fixed_mul(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """gemmlowp ``FixedPoint * FixedPoint``: the raw result is ``srdhm(a, b)``
    (integer bits add up)."""
    return saturating_rounding_doubling_high_mul(a, b)


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """``exp(a)`` for Q0.31 ``a`` in [-1/4, 0): Taylor series around -1/8,
    ``e^-1/8 * (1 + x + x^2/2 + x^3/6 + x^4/24)`` with ``x = a + 1/8``."""
    constant_term, one_third = 1895147668, 715827883  # exp(-1/8), 1/3 in Q0.31
    x = wrap_int32(a + (1 << 28))
    x2 = _fixed_mul(x, x)
    x3 = _fixed_mul(x2, x)
    x4 = _fixed_mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    polynomial = rounding_divide_by_pot(
        wrap_int32(_fixed_mul(wrap_int32(x4_over_4 + x3), one_third) + x2), 1)
    return wrap_int32(constant_term + _fixed_mul(constant_term, wrap_int32(x + polynomial)))


def exp_on_negative_values(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp ``exp_on_negative_values``: Q0.31 ``exp(a)`` for ``a <= 0`` in
    Q(integer_bits): exp of ``a mod 1/4`` by series, times ``exp(-2^k)`` for every set bit
    ``k`` of the rest (barrel shifter), 0 below -32, exactly One at ``a == 0``."""
    a = _int64(a)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_quarter = wrap_int32((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_quarter, integer_bits))
    remainder = wrap_int32(a_mod_quarter_minus_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = np.int64(1) << (fractional_bits + exponent)
            result = np.where((remainder & bit) != 0, _fixed_mul(result, multiplier), result)
    if integer_bits > 5:
        result = np.where(a < -(1 << (36 - integer_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_f2(half_denominator: np.ndarray) -> np.ndarray:
    """Q2.29 ``1 / half_denominator`` by three Newton-Raphson steps from ``48/17 - 32/17 d``."""
    one_f2 = 1 << 29
    x = wrap_int32(1515870810 + _fixed_mul(half_denominator, -1010580540))
    for _ in range(3):
        one_minus = wrap_int32(one_f2 - _fixed_mul(half_denominator, x))
        x = wrap_int32(x + saturating_rounding_multiply_by_pot(_fixed_mul(x, one_minus), 2))
    return x


def _rounding_half_sum(a: np.ndarray, b: ArrayLike) -> np.ndarray:
    """gemmlowp ``RoundingHalfSum``: ``trunc((a + b + sign(a + b)) / 2)`` (sign(0) = +1)."""
    total = _int64(a) + _int64(b)
    return truncating_divide(total + np.where(total >= 0, 1, -1), 2)


def one_over_one_plus_x_for_x_in_0_1(a: ArrayLike) -> np.ndarray:
    """gemmlowp: Q0.31 ``1 / (1 + a)`` for Q0.31 ``a`` in [0, 1)."""
    x = _newton_reciprocal_f2(_rounding_half_sum(_int64(a), INT32_MAX))
    return saturating_rounding_multiply_by_pot(x, 1)  # Rescale<0>(ExactMulByPot<-1>(Q2))


def one_minus_x_over_one_plus_x_for_x_in_0_1(a: ArrayLike) -> np.ndarray:
    """gemmlowp: Q0.31 ``(1 - a) / (1 + a)`` for Q0.31 ``a`` in [0, 1)."""
    x = _newton_reciprocal_f2(_rounding_half_sum(_int64(a), INT32_MAX))
    return saturating_rounding_multiply_by_pot(wrap_int32(x - (1 << 29)), 2)


def logistic(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp ``logistic``: Q0.31 ``1 / (1 + exp(-a))`` of Q(integer_bits) ``a``
    (``1/(1 + exp(-|a|))`` mirrored for negative ``a``; exactly 1/2 at 0)."""
    a = _int64(a)
    positive = a > 0
    absolute = np.where(positive, a, wrap_int32(-a))
    if_positive = one_over_one_plus_x_for_x_in_0_1(
        exp_on_negative_values(wrap_int32(-absolute), integer_bits))
    if_negative = wrap_int32(INT32_MAX - if_positive)
    return np.where(a == 0, 1 << 30, np.where(positive, if_positive, if_negative))


def tanh(a: ArrayLike, integer_bits: int) -> np.ndarray:
    """gemmlowp ``tanh``: Q0.31 ``tanh(a)`` of Q(integer_bits) ``a``, via
    ``(1 - exp(2n)) / (1 + exp(2n))`` on ``n = -|a|``; exactly 0 at 0."""
    a = _int64(a)
    negative = a < 0
    n = np.where(negative, a, wrap_int32(-a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, wrap_int32(-t), t))


def count_leading_zeros_32(x: ArrayLike) -> np.ndarray:
    """Leading zero bits of ``x`` as uint32 (32 for 0)."""
    unsigned = _int64(x) & 0xFFFFFFFF
    _, bit_length = np.frexp(unsigned.astype(np.float64))
    return 32 - bit_length.astype(np.int64)


def get_reciprocal(x: ArrayLike, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite ``GetReciprocal``: for positive Q(x_integer_digits) ``x`` returns Q0.31
    ``shifted_scale`` and ``num_bits_over_unit`` with
    ``1/x = shifted_scale * 2^-num_bits_over_unit``: ``x`` is normalised to ``[1, 2)``
    (``h = clz(x)``) and ``1 / (1 + (x << h) - 1)`` taken by ``one_over_one_plus_x``."""
    x = _int64(x)
    headroom_plus_one = count_leading_zeros_32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_minus_one = wrap_int32(((x << headroom_plus_one) & 0xFFFFFFFF) - 2**31)
    return one_over_one_plus_x_for_x_in_0_1(shifted_minus_one), num_bits_over_unit


def calculate_input_radius(input_integer_bits: int, input_left_shift: int,
                           total_signed_bits: int = 31) -> int:
    """TFLite ``CalculateInputRadius``: the largest input difference whose rescaled value
    stays representable, ``floor((2^ib - 1) * 2^(total - ib) / 2^left_shift)``."""
    rescaled = (1.0 * ((1 << input_integer_bits) - 1) * float(1 << (total_signed_bits - input_integer_bits))
                / float(1 << input_left_shift))
    return int(math.floor(rescaled))


def preprocess_softmax_scaling(beta: float, input_scale: float,
                               input_integer_bits: int) -> tuple[int, int]:
    """TFLite ``PreprocessSoftmaxScaling``: ``(multiplier, left_shift)`` of
    ``min(beta * input_scale * 2^(31 - input_integer_bits), 2^31 - 1)`` (>= 1)."""
    real = min(float(beta) * float(input_scale) * float(1 << (31 - input_integer_bits)),
               float(2**31 - 1))
    return quantize_multiplier_greater_than_one(real)


def frexp_multiplier(real: float) -> tuple[int, int]:
    """Logistic / Tanh int8 prepare: ``q, shift = frexp(real)``, ``round_half_away(q * 2^31)``
    *without* ``quantize_multiplier``'s 2^31 fix-up (as TFLM does; a rounded 2^31 wraps)."""
    q, shift = math.frexp(float(real))
    return int(wrap_int32(int(round_half_away(q * 2.0**31)))), shift


# -- prepare-time helpers -------------------------------------------------------------
def quantize_scalar_f32(real: float, scale: float, zero_point: int) -> int:
    """TFLite's prepare-time ``Quantize``: ``zero_point + (int)roundf(real / scale)`` in float32."""
    return int(zero_point) + int(round_half_away(np.float32(real) / np.float32(scale)))


def quantized_activation_range(activation_min: float | None, activation_max: float | None,
                               scale: float, zero_point: int, dtype: np.dtype) -> tuple[int, int]:
    """TFLite ``CalculateActivationRangeQuantized`` for a fused clamp ``[min, max]`` (None =
    unbounded): each bound quantized with ``quantize_scalar_f32`` and intersected with the
    range of ``dtype``."""
    info = np.iinfo(dtype)
    low, high = int(info.min), int(info.max)
    if activation_min is not None:
        low = max(low, quantize_scalar_f32(activation_min, scale, zero_point))
    if activation_max is not None:
        high = min(high, quantize_scalar_f32(activation_max, scale, zero_point))
    return low, high


# -- int16 lookup tables (TFLite LUTPopulateInt16 / LUTLookup) ---------------------------------
def lut_populate_int16(transform, input_scale: float | np.floating, input_zero_point: int,
                       output_scale: float | np.floating,
                       output_zero_point: int) -> np.ndarray:
    """TFLite ``LUTPopulateInt16<float>``: a 513-entry int16 table of ``transform`` sampled at
    512 even steps over the int16 input range, everything in float32. Each entry is
    ``round(f(x_i) * inv) - round(err_i / 2)`` where ``err_i`` is the table's interpolation
    error at the step's midpoint (so linear interpolation is centred), clamped to int16;
    ``inv = 65536 / (output_max - output_min)``."""
    f32 = np.float32
    input_min = f32(input_scale) * f32(INT16_MIN - input_zero_point)
    input_max = f32(input_scale) * f32(INT16_MAX - input_zero_point)
    output_min = f32(output_scale) * f32(INT16_MIN - output_zero_point)
    output_max = f32(output_scale) * f32(INT16_MAX - output_zero_point)
    step = (input_max - input_min) / f32(512)
    inverse = f32(65536) / (output_max - output_min)
    index = np.arange(512, dtype=np.float32)
    value = transform(input_min + index * step)
    midpoint = transform(input_min + index * step + step / f32(2))
    following = transform(input_min + (index + f32(1)) * step)
    sample = round_half_away(value * inverse)
    interpolated = round_half_away((following * inverse + sample) / f32(2))
    bias = round_half_away((interpolated - round_half_away(midpoint * inverse)) / f32(2))
    table = np.clip(np.append(sample - bias, round_half_away(transform(input_max) * inverse)),
                    INT16_MIN, INT16_MAX)
    return table.astype(np.int16)


def lut_lookup_int16(value: ArrayLike, table: np.ndarray) -> np.ndarray:
    """TFLite ``LUTLookup`` for int16: entry ``256 + (v >> 7)`` plus the interpolated slope,
    ``base + ((next - base) * (v & 127) + 64) >> 7``."""
    value = _int64(value)
    index = 256 + (value >> 7)
    base = table[index].astype(np.int64)
    slope = table[index + 1].astype(np.int64) - base
    return wrap_int16(base + ((slope * (value & 0x7F) + 64) >> 7))
