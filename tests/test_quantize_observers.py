"""Observers (range choice) and scheme (scale / zero point) on hand-made distributions."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.quantize import scheme
from mcudeploy.quantize.observers import RANGE_METHODS, ValueSample, clipped_fraction, observed_range


def _sample(values: np.ndarray, batches: int = 4) -> ValueSample:
    sample = ValueSample()
    for part in np.array_split(values, batches):
        sample.update(part)
    return sample


def test_minmax_is_exact_even_when_the_extreme_is_not_sampled():
    rng = np.random.default_rng(0)
    values = rng.uniform(-1.0, 2.0, 200_000).astype(np.float32)
    values[123_457] = 7.25
    low, high = observed_range(_sample(values), "minmax")
    assert (low, high) == (float(values.min()), 7.25)


def test_percentile_clips_a_single_outlier():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.uniform(-1, 1, 50_000), [40.0]]).astype(np.float32)
    low, high = observed_range(_sample(values), "percentile")
    assert -1.0 <= low < -0.99 and 0.99 < high <= 1.0


@pytest.mark.parametrize("method", ["entropy", "mse"])
def test_kl_and_mse_ranges_are_narrower_than_minmax_on_heavy_tails(method):
    values = np.random.default_rng(2).standard_t(2, 100_000).astype(np.float32)
    sample = _sample(values)
    low, high = observed_range(sample, method)
    full_low, full_high = observed_range(sample, "minmax")
    assert full_low < low < 0 < high < full_high
    # mse weighs every value (the histogram holds them all): the few far outliers of a
    # t(2) sample keep its range wider than entropy's
    assert high - low < (0.5 if method == "entropy" else 0.9) * (full_high - full_low)
    # narrower but not absurd: most values still inside
    assert clipped_fraction(sample, low, high) < 0.05


@pytest.mark.parametrize("method", sorted(RANGE_METHODS))
def test_one_signed_relu_output_keeps_zero_as_lower_bound(method):
    values = np.abs(np.random.default_rng(3).standard_normal(50_000)).astype(np.float32)
    low, high = observed_range(_sample(values), method)
    assert 0.0 <= low <= np.percentile(values, 1) and 2.0 < high <= values.max()
    assert int(scheme.activation_params(low, high).zero_point[0]) == -128


def test_empty_observer_gives_a_zero_range():
    assert observed_range(ValueSample(), "entropy") == (0.0, 0.0)


@pytest.mark.parametrize("low,high", [(-1.0, 3.0), (0.0, 6.0), (0.5, 2.0), (-5.0, -0.1),
                                      (-1e-3, 1e-3), (-200.0, 0.25)])
def test_int8_activation_params_cover_range_and_represent_zero(low, high):
    params = scheme.activation_params(low, high, "int8")
    scale, zero_point = float(params.scale[0]), int(params.zero_point[0])
    assert -128 <= zero_point <= 127 and params.scale.dtype == np.float32
    represented = scale * (np.array([-128, 127]) - zero_point)
    assert represented[0] <= min(low, 0) + scale and represented[1] >= max(high, 0) - scale
    zero = scheme.quantize_array(np.zeros(1, np.float32), params, "int8")
    assert params.dequantize(zero)[0] == 0.0  # 0.0 is exactly representable


def test_int16_activation_params_are_symmetric():
    params = scheme.activation_params(-0.5, 3.0, "int16")
    assert int(params.zero_point[0]) == 0
    assert float(params.scale[0]) == pytest.approx(3.0 / 32767, rel=1e-6)


def test_degenerate_range_gets_unit_scale():
    params = scheme.activation_params(0.0, 0.0)
    assert float(params.scale[0]) == 1.0


def test_per_channel_symmetric_weights():
    weights = np.stack([np.linspace(-1, 1, 12), np.linspace(-0.01, 0.02, 12),
                        np.zeros(12)]).reshape(3, 2, 2, 3).astype(np.float32)
    quantized, params = scheme.weight_params(weights, per_channel=True)
    assert quantized.dtype == np.int8 and params.axis == 0 and params.scale.size == 3
    assert np.all(params.zero_point == 0)
    assert np.abs(quantized).max() <= 127
    assert np.abs(quantized[0]).max() == 127 and np.abs(quantized[1]).max() == 127
    assert np.all(quantized[2] == 0) and params.scale[2] > 0
    error = np.abs(params.dequantize(quantized) - weights)
    assert np.all(error <= params.scale.reshape(3, 1, 1, 1) / 2 + 1e-9)


def test_per_tensor_weights_share_one_scale():
    weights = np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32)
    _, params = scheme.weight_params(weights, per_channel=False)
    assert params.axis is None and float(params.scale[0]) == pytest.approx(np.abs(weights).max() / 127)


def test_bias_scale_is_input_scale_times_weight_scale():
    weights = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    _, weight_quant = scheme.weight_params(weights)
    bias = np.array([0.5, -1.0, 0.0, 2.5], np.float32)
    values, params = scheme.bias_params(bias, 0.02, weight_quant)
    assert values.dtype == np.int32 and params.axis == 0
    np.testing.assert_allclose(params.scale, 0.02 * weight_quant.scale.astype(np.float64), rtol=1e-6)
    np.testing.assert_allclose(params.dequantize(values), bias, atol=float(params.scale.max()))


def test_huge_bias_raises_weight_scale_so_it_fits_int32():
    weights = np.full((1, 4), 1e-6, np.float32)
    bias = np.array([1e6], np.float32)
    scales = scheme.fit_weight_scales_to_bias(weights, bias, 1e-3)
    values, _ = scheme.bias_params(bias, 1e-3, scheme.weight_params(weights, scales=scales)[1])
    assert abs(int(values[0])) < 2**31 - 1


def _sparse_relu6_tensor(seed: int = 6) -> np.ndarray:
    """A post-ReLU6 tensor as MobileNet layers produce: 70 % exact zeros, a dense bulk near
    0 and a sparse tail of large values up to the saturation at 6."""
    rng = np.random.default_rng(seed)
    size = 200_000
    values = np.abs(rng.standard_normal(size) * 0.25)
    values[rng.random(size) < 0.7] = 0.0
    tail = rng.random(size) < 0.01
    values[tail] = rng.uniform(1.0, 6.0, int(tail.sum()))
    values[rng.random(size) < 0.002] = 6.0
    return values.astype(np.float32)


def test_entropy_keeps_the_sparse_tail_of_a_relu6_output():
    # The KL search alone cut such tensors to about a quarter of their range (MobileNetV2:
    # 1.5 of 6; VWW activation_24: 0.99 of 7.89), clipping values that carry the signal.
    values = _sparse_relu6_tensor()
    sample = _sample(values)
    low, high = observed_range(sample, "entropy")
    assert low == 0.0 and high <= 6.0
    assert high >= 0.99 * np.percentile(values, 99.99)
    assert clipped_fraction(sample, low, high) <= 1e-4
    # energy view: the clipped range loses no more than minmax's coarser steps do
    from mcudeploy.quantize.observers import quantization_error
    assert quantization_error(values, low, high) <= 1.5 * quantization_error(values, 0.0, 6.0)


def test_entropy_still_clips_a_gaussian_at_a_few_sigma():
    values = np.random.default_rng(7).standard_normal(200_000).astype(np.float32)
    sample = _sample(values)
    low, high = observed_range(sample, "entropy")
    full_low, full_high = observed_range(sample, "minmax")
    assert full_low < low < -2.5 and 2.5 < high < full_high
    assert low == pytest.approx(-high)


@pytest.mark.parametrize("weight,expected", [(0.05610236, 10), (-0.05610236, -10), (0.1269685, 22)])
def test_weights_round_in_float32_like_tflite(weight, expected):
    # w * float32(127 / 0.75) is exactly 9.5 / -9.5 / 21.5 in float32 (ties away from zero),
    # but w / scale in float64 is 9.4999999..., which rounds to 9.
    weights = np.array([[0.75, weight]], np.float32)
    product = np.float32(weights[0, 1]) * (np.float32(127) / np.float32(0.75))
    assert abs(float(product)) % 1 == 0.5
    assert abs(float(weights[0, 1]) / float(np.float32(0.75 / 127))) % 1 < 0.5
    quantized, params = scheme.weight_params(weights, per_channel=True)
    assert float(params.scale[0]) == float(np.float32(0.75 / 127))
    assert quantized.tolist() == [[127, expected]]


def test_bias_rounds_in_float32_like_tflite():
    # bias * float32(1 / float32(0.02 * s_w)) is exactly 101.5 in float32; 101.49999 in float64
    _, weight_quant = scheme.weight_params(np.array([[0.75, 0.1]], np.float32))
    values, params = scheme.bias_params(np.array([0.011988188], np.float32), 0.02, weight_quant)
    assert float(params.scale[0]) == float(np.float32(np.float32(0.02) * weight_quant.scale[0]))
    assert 0.011988188 / float(params.scale[0]) < 101.5
    assert values.tolist() == [102]


@pytest.mark.parametrize("model", ["resnet8", "mobilenetv1_vww", "fc_autoencoder"])
def test_weights_and_biases_match_the_mlperf_int8_models_bit_for_bit(model):
    """Given the MLPerf int8 model's scales, our integer weights and biases equal theirs (made
    by TFLite's converter from the same float model), every one of them."""
    from conftest import shared_model
    from mcudeploy.importers import load_model

    float_graph = load_model(shared_model(f"mlperf_tiny/{model}_float.tflite"))
    int8_graph = load_model(shared_model(f"mlperf_tiny/{model}_int8.tflite"))
    float_nodes = {node.name: node for node in float_graph.nodes}
    checked = 0
    for node in int8_graph.nodes:
        if node.op not in ("Conv", "Gemm") or node.name not in float_nodes:
            continue
        source, weight_quant = float_nodes[node.name], node.inputs[1].quant
        quantized, ours = scheme.weight_params(source.inputs[1].const, weight_quant.axis is not None,
                                               weight_quant.scale.astype(np.float32))
        np.testing.assert_array_equal(quantized, node.inputs[1].const, err_msg=node.name)
        bias, _ = scheme.bias_params(source.input(2).const.reshape(-1),
                                     float(node.inputs[0].quant.scale[0]), ours)
        np.testing.assert_array_equal(bias, node.input(2).const.reshape(-1), err_msg=node.name)
        checked += 1
    assert checked >= 9
