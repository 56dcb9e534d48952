"""mcudeploy.arithmetic.fixed_point against hand-worked values and against literal (scalar,
gemmlowp-shaped) ports of the C code: the module uses shorter closed forms, so the literal
ports are an independent check of those identities."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mcudeploy.arithmetic import fixed_point as fp

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


# -- literal scalar ports of gemmlowp / TFLite (Python ints, C semantics) ------------------
def c_div(a: int, b: int) -> int:
    """C integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def literal_srdhm(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def literal_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def edge_values(rng: np.random.Generator, count: int) -> np.ndarray:
    edges = [0, 1, -1, 2, -2, 3, -3, INT32_MAX, INT32_MIN, INT32_MIN + 1, 1 << 30, -(1 << 30),
             (1 << 30) + 1, -(1 << 30) - 1, 12345, -12345]
    return np.concatenate([edges, rng.integers(INT32_MIN, INT32_MAX, count, endpoint=True)])


# -- quantize_multiplier ---------------------------------------------------------------
@pytest.mark.parametrize("real, expected", [
    (0.0, (0, 0)),
    (0.5, (1 << 30, 0)),                  # frexp(0.5) = (0.5, 0)
    (1.0, (1 << 30, 1)),                  # frexp(1) = (0.5, 1)
    (0.75, (1610612736, 0)),              # 0.75 * 2^31
    (0.1, (1717986918, -3)),              # 0.8 * 2^31 = 1717986918.4, frexp exponent -3
    (1 - 2**-33, (1 << 30, 1)),           # q * 2^31 rounds up to 2^31: halve, shift + 1
    (0.5 + 2**-32, ((1 << 30) + 1, 0)),   # q * 2^31 = 2^30 + 0.5: half rounds away from zero
    (2.0**-40, (0, 0)),                   # shift -39 < -31: flushed to zero
    (3.0, (1610612736, 2)),
])
def test_quantize_multiplier_hand_worked(real, expected):
    assert fp.quantize_multiplier(real) == expected


def test_quantize_multiplier_reconstructs_the_real_value():
    for real in np.geomspace(1e-9, 1e3, 200):
        multiplier, shift = fp.quantize_multiplier(real)
        assert (1 << 30) <= multiplier < (1 << 31)
        assert abs(multiplier * 2.0 ** (shift - 31) - real) <= real * 2**-31


def test_quantize_multipliers_vectorised_matches_scalar():
    # the edges of the rule: zero, flush to zero below 2^-32, a mantissa that rounds up to
    # 2^31 (becomes 2^30 with shift + 1), negatives, and a spread of real scales
    edges = [0.0, 0.5, 1e-3, 0.1, 7.5, 2.0**-33, 2.0**-32, 1.0 - 2.0**-33, 0.5 - 2.0**-34, -0.3, -(1.0 - 2.0**-33)]
    spread = np.random.default_rng(0).uniform(-40, 12, 3003)
    reals = np.concatenate([edges, 2.0**spread]).reshape(2, -1)      # the shape is kept
    multipliers, shifts = fp.quantize_multipliers(reals)
    assert multipliers.dtype == np.int32 and shifts.dtype == np.int32 and multipliers.shape == reals.shape
    assert [(int(m), int(s)) for m, s in zip(multipliers.ravel(), shifts.ravel())] == \
        [fp.quantize_multiplier(r) for r in reals.ravel()]
    with pytest.raises((OverflowError, ValueError)):
        fp.quantize_multipliers(np.array([0.5, np.inf]))


def test_smaller_than_one_and_greater_than_one_checks():
    assert fp.quantize_multiplier_smaller_than_one_exp(0.25) == (1 << 30, -1)
    assert fp.quantize_multiplier_greater_than_one(2.0**18) == (1 << 30, 19)
    with pytest.raises(ValueError):
        fp.quantize_multiplier_smaller_than_one_exp(1.5)
    with pytest.raises(ValueError):
        fp.quantize_multiplier_greater_than_one(0.5)


@pytest.mark.parametrize("multiplier, expected", [
    (1 << 30, 1 << 14), ((1 << 30) + (1 << 15), (1 << 14) + 1), (INT32_MAX - 100, 32767)])
def test_down_scale_int32_to_int16_multiplier(multiplier, expected):
    assert fp.down_scale_int32_to_int16_multiplier(multiplier) == expected


# -- int32 primitives --------------------------------------------------------------------
@pytest.mark.parametrize("a, b, expected", [
    (1 << 30, 1 << 30, 1 << 29),      # 0.5 * 0.5 = 0.25 in Q0.31
    (3, 1 << 30, 2),                  # 1.5 rounds up
    (-3, 1 << 30, -1),                # -1.5 rounds toward +inf (gemmlowp's nudge)
    (-1, 1 << 30, 0),
    (INT32_MIN, INT32_MIN, INT32_MAX),  # the one saturating case
    (INT32_MIN, INT32_MAX, -INT32_MAX),
])
def test_srdhm_hand_worked(a, b, expected):
    assert int(fp.saturating_rounding_doubling_high_mul(a, b)) == expected


def test_srdhm_matches_literal_port():
    rng = np.random.default_rng(0)
    a, b = edge_values(rng, 3000), np.roll(edge_values(rng, 3000), 7)
    ours = fp.saturating_rounding_doubling_high_mul(a, b)
    assert [int(v) for v in ours] == [literal_srdhm(int(x), int(y)) for x, y in zip(a, b)]


@pytest.mark.parametrize("x, exponent, expected", [
    (5, 1, 3), (-5, 1, -3), (4, 1, 2), (-4, 1, -2), (7, 2, 2), (-6, 2, -2), (-5, 2, -1),
    (123, 0, 123), (-123, 0, -123), (INT32_MAX, 31, 1), (INT32_MIN, 31, -1)])
def test_rounding_divide_by_pot_hand_worked(x, exponent, expected):
    assert int(fp.rounding_divide_by_pot(x, exponent)) == expected


def test_rounding_divide_by_pot_matches_literal_port_with_per_element_exponents():
    rng = np.random.default_rng(1)
    x = edge_values(rng, 3000)
    exponents = rng.integers(0, 32, x.size)
    ours = fp.rounding_divide_by_pot(x, exponents)
    assert [int(v) for v in ours] == [literal_rdbpot(int(v), int(e)) for v, e in zip(x, exponents)]


@pytest.mark.parametrize("x, multiplier, shift, expected", [
    (100, 1 << 30, 0, 50),
    (7, 1 << 30, 0, 4),        # 3.5 -> 4
    (-3, 1 << 30, 0, -1),      # srdhm rounds -1.5 to -1
    (5, 1 << 30, -1, 2),       # double rounding: 5/4 -> srdhm 2.5 -> 3 -> rdbpot 1.5 -> 2
    (3, 1 << 30, 2, 6),        # left shift first: (3 << 2) * 0.5
    (1 << 30, 1 << 30, 2, 0),  # (2^30 << 2) wraps to 0 in int32
])
def test_multiply_by_quantized_multiplier_hand_worked(x, multiplier, shift, expected):
    assert int(fp.multiply_by_quantized_multiplier(x, multiplier, shift)) == expected


def test_multiply_by_quantized_multiplier_matches_literal_composition():
    rng = np.random.default_rng(2)
    x = rng.integers(-(1 << 24), 1 << 24, 2000)
    multipliers = rng.integers(1 << 30, INT32_MAX, 2000)
    shifts = rng.integers(-20, 4, 2000)
    ours = fp.multiply_by_quantized_multiplier(x, multipliers, shifts)
    for value, m, s, got in zip(x, multipliers, shifts, ours):
        shifted = ((int(value) << max(int(s), 0)) + 2**31) % 2**32 - 2**31
        assert int(got) == literal_rdbpot(literal_srdhm(shifted, int(m)), max(-int(s), 0))


def test_single_rounding_variant_differs_where_double_rounding_bites():
    assert int(fp.multiply_by_quantized_multiplier_single_rounding(5, 1 << 30, -1)) == 1  # 1.25
    assert int(fp.multiply_by_quantized_multiplier(5, 1 << 30, -1)) == 2


@pytest.mark.parametrize("x, multiplier, shift, expected", [
    (1000, 1 << 30, 0, 500),     # m16 = 2^14; (1000 * 2^14 + 2^14) >> 15 = 500.5 -> 500
    (1001, 1 << 30, 0, 501),     # 500.5 + 0.5 -> 501
    (-1001, 1 << 30, 0, -500),   # floor((-1001 * 2^14 + 2^14) / 2^15) = -500
    (2**40, 1 << 30, -20, 2**19),
    (4, 0x7FFF0000, 0, 4),       # m16 saturates to 0x7FFF: (4 * 32767 + 2^14) >> 15 = 4
])
def test_multiply_by_quantized_multiplier_int64_hand_worked(x, multiplier, shift, expected):
    assert int(fp.multiply_by_quantized_multiplier_int64(x, multiplier, shift)) == expected


def test_greater_than_one_and_smaller_than_one_helpers():
    assert int(fp.multiply_by_quantized_multiplier_greater_than_one(3, 1 << 30, 2)) == 6
    assert int(fp.multiply_by_quantized_multiplier_smaller_than_one_exp(5, 1 << 30, -1)) == 2


# -- int16 primitives --------------------------------------------------------------------
@pytest.mark.parametrize("function, a, b, expected", [
    (fp.saturating_rounding_doubling_high_mul_int16, 16384, 16384, 8192),
    (fp.saturating_rounding_doubling_high_mul_int16, 3, 16384, 2),      # 1.5 -> 2
    (fp.saturating_rounding_doubling_high_mul_int16, -3, 16384, -1),    # -1.5 -> -1
    (fp.saturating_rounding_doubling_high_mul_int16, -32768, -32768, 32767),
    (fp.saturating_doubling_high_mul_int16, 3, 16384, 1),               # truncates 1.5
    (fp.saturating_doubling_high_mul_int16, -3, 16384, -1),
    (fp.saturating_doubling_high_mul_int16, -32768, -32768, 32767),
])
def test_int16_high_muls(function, a, b, expected):
    assert int(function(a, b)) == expected


@pytest.mark.parametrize("x, amount, expected", [(20000, 1, 32767), (-20000, 1, -32768), (100, 2, 400)])
def test_saturating_left_shift_int16(x, amount, expected):
    assert int(fp.saturating_left_shift_int16(x, amount)) == expected


# -- small helpers -------------------------------------------------------------------------
def test_round_half_away_wrap_and_truncating_divide():
    values = np.array([0.5, 1.5, -0.5, -2.5, 2.4, np.nextafter(np.float32(0.5), 0)], np.float32)
    assert fp.round_half_away(values).tolist() == [1, 2, -1, -3, 2, 0]
    assert fp.round_half_away(values).dtype == np.float32
    assert fp.wrap_int32(np.array([2**31, -(2**31) - 1, 5])).tolist() == [INT32_MIN, INT32_MAX, 5]
    assert fp.wrap_int16(np.array([32768, -32769])).tolist() == [-32768, 32767]
    assert fp.truncating_divide(np.array([-7, 7, -7]), np.array([2, -2, -2])).tolist() == [-3, -3, 3]


@pytest.mark.parametrize("low, high, scale, zero_point, expected", [
    (None, None, 0.05, -10, (-128, 127)),
    (0.0, None, 0.05, -10, (-10, 127)),
    (0.0, 6.0, 0.05, -10, (-10, 110)),     # 6 / 0.05f = 119.99999 -> 120
    (-1.0, 1.0, 0.1, 0, (-10, 10)),
    (0.0, 6.0, 0.001, 0, (0, 127)),        # clamp to the dtype range
])
def test_quantized_activation_range(low, high, scale, zero_point, expected):
    assert fp.quantized_activation_range(low, high, scale, zero_point, np.int8) == expected


def test_frexp_multiplier_and_input_radius():
    # 1/16 * 2^27 = 2^23 = 0.5 * 2^24
    assert fp.frexp_multiplier(2.0**23) == (1 << 30, 24)
    assert fp.calculate_input_radius(5, 26) == 31           # (2^5 - 1) * 2^26 / 2^26
    assert fp.calculate_input_radius(4, 24) == 120          # 15 * 2^27 / 2^24
    assert fp.preprocess_softmax_scaling(1.0, 1 / 256, 5) == (1 << 30, 19)  # 2^-8 * 2^26


# -- gemmlowp fixed-point functions ----------------------------------------------------------
def test_exp_on_negative_values():
    q5 = 1 << 26  # 1.0 in Q5.26
    inputs = np.array([0, -q5 // 4, -q5, -3 * q5, -10 * q5, -q5 // 1000])
    result = fp.exp_on_negative_values(inputs, 5)
    assert int(result[0]) == INT32_MAX                  # exactly One at 0
    expected = np.exp(inputs / q5) * 2**31
    assert np.all(np.abs(result - expected) <= 2**31 * 5e-7)  # series accuracy ~2.2e-7
    assert np.all(np.diff(fp.exp_on_negative_values(-np.arange(0, 31 * q5, q5 // 7), 5)) <= 0)
    assert int(fp.exp_on_negative_values(-33 * (1 << 24), 7)) == 0   # below -32: zero


def test_logistic_and_tanh():
    q4 = 1 << 27  # 1.0 in Q4.27
    x = np.array([-7.5, -2.0, -0.3, 0.0, 0.3, 2.0, 7.5])
    raw = (x * q4).astype(np.int64)
    logistic = fp.logistic(raw, 4)
    tanh = fp.tanh(raw, 4)
    assert int(logistic[3]) == 1 << 30 and int(tanh[3]) == 0
    assert np.all(np.abs(logistic / 2**31 - 1 / (1 + np.exp(-x))) < 1e-6)
    assert np.all(np.abs(tanh / 2**31 - np.tanh(x)) < 2e-6)
    mirrored = logistic + logistic[::-1]
    assert np.all(np.delete(mirrored, 3) == INT32_MAX)  # exact mirror: One - f(|x|) off zero


def test_one_over_one_plus_x_and_reciprocal():
    x = np.array([0, 1 << 29, 1 << 30, INT32_MAX])   # 0, 0.25, 0.5, ~1 in Q0.31
    result = fp.one_over_one_plus_x_for_x_in_0_1(x) / 2**31
    assert np.all(np.abs(result - 1 / (1 + x / 2**31)) < 1e-8)
    assert np.all(np.abs(fp.one_minus_x_over_one_plus_x_for_x_in_0_1(x) / 2**31
                         - (1 - x / 2**31) / (1 + x / 2**31)) < 1e-8)
    # 3.0 in Q12.19: clz = 11, num_bits_over_unit = 1, normalised 1.5 -> 1/1.5 = 2/3
    scale, bits_over_unit = fp.get_reciprocal(np.array([3 << 19]), 12)
    assert int(bits_over_unit[0]) == 1
    assert abs(int(scale[0]) / 2**31 - 2 / 3) < 1e-8
    assert fp.count_leading_zeros_32(np.array([0, 1, INT32_MAX, -1])).tolist() == [32, 31, 1, 0]
    assert math.isclose(int(scale[0]) / 2**31 * 2.0**-1, 1 / 3, rel_tol=1e-8)
