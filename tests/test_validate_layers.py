"""Layer-by-layer comparison: tensor matching rules, dequantization, the first jump."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.importers import load_model
from mcudeploy.ir import DType, QuantParams, Value, verify
from mcudeploy.reference import run_float
from mcudeploy.reference.float_kernels.quant import quantize
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.layers import JUMP_DB, compare_layers, layout_match, match_tensors, real
from validate_pairs import tiny_pair


def feeds(float_graph, int8_graph, count=16):
    x = np.random.default_rng(5).uniform(-1, 1, (count, *float_graph.inputs[0].shape)).astype(np.float32)
    return {"x": x}, {int8_graph.inputs[0].name: quantize(x, int8_graph.inputs[0].quant, np.int8)}


@pytest.mark.parametrize("prefix, how", [("", "name"), ("q_", "position")])
def test_matching_by_name_and_by_position(tmp_path, prefix, how):
    float_path, int8_path = tiny_pair(tmp_path, prefix=prefix)
    float_graph, int8_graph = load_model(float_path), load_model(int8_path)
    verify(int8_graph)
    pairs = match_tensors(float_graph, int8_graph)
    assert [(f.name, q.name, m) for f, q, _, m in pairs] == [
        (name, prefix + name, how) for name in ("y1", "y2", "flat", "logits")]


def test_healthy_model_has_no_jump_and_figures_match_numpy(tmp_path):
    float_path, int8_path = tiny_pair(tmp_path)
    float_graph, int8_graph = load_model(float_path), load_model(int8_path)
    float_feeds, int_feeds = feeds(float_graph, int8_graph)
    report = compare_layers(float_graph, int8_graph, float_feeds, int_feeds)
    assert report.first_jump is None and len(report.layers) == 4
    # Independent recomputation of the y2 figures from the two executors.
    reference = np.stack([run_float(float_graph, {"x": x}, capture=True)["y2"] for x in float_feeds["x"]])
    captured = run_int(int8_graph, int_feeds, batch=True, capture=True)["y2"]
    params = int8_graph.node("y2").outputs[0].quant
    estimate = params.scale[0] * (captured.astype(np.float64) - params.zero_point[0])
    y2 = next(layer for layer in report.layers if layer.node == "y2")
    assert y2.max_abs_error == pytest.approx(np.abs(reference - estimate).max(), rel=1e-5)
    noise = np.sum((reference - estimate) ** 2)
    assert y2.sqnr_db == pytest.approx(10 * np.log10(np.sum(reference ** 2.0) / noise), rel=1e-4)
    assert all(layer.cosine > 0.999 for layer in report.layers)


def test_wrong_scale_jumps_at_its_layer(tmp_path):
    float_path, int8_path = tiny_pair(tmp_path, bad_scale=8.0, prefix="q_")
    float_graph, int8_graph = load_model(float_path), load_model(int8_path)
    report = compare_layers(float_graph, int8_graph, *feeds(float_graph, int8_graph))
    by_node = {layer.node: layer for layer in report.layers}
    assert report.first_jump == "q_y2"
    assert by_node["q_y2"].drop_db > JUMP_DB > by_node["q_y1"].drop_db
    assert "q_y2" in report.most_sensitive(1)


def test_layout_match_and_dequantization():
    assert layout_match((1, 3, 4, 5), (1, 3, 4, 5)) == "same"
    assert layout_match((1, 3, 4, 5), (1, 4, 5, 3)) == "nchw"
    assert layout_match((1, 3, 4, 5), (1, 5, 4, 3)) is None

    value = Value("v", DType.INT8, (1, 2),
                  quant=QuantParams(np.array([0.5, 2.0], np.float32), np.array([1, -1]), axis=1))
    dequantized = real(value, np.array([[[3, 3]], [[1, -1]]], np.int8))
    np.testing.assert_array_equal(dequantized, [[[1.0, 8.0]], [[0.0, 0.0]]])
