"""The validate stage's plumbing: the default random range, feeding the quantized model,
and pairing the two models' inputs and outputs."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.validate.compare import DEFAULT_RANGE, check_models, default_range, quantized_feeds, validate_models
from mcudeploy.validate.data import Samples
from validate_pairs import qdq_graph, tiny_pair


def nhwc_int8_graph() -> Graph:
    graph = Graph("nhwc")
    x = graph.add_input("x", DType.INT8, (1, 2, 2, 3), quant=QuantParams(np.float32(0.5), -10))
    graph.outputs = [graph.add_node("Reshape", [x], {"shape": (1, 12)}, name="flat").outputs[0]]
    verify(graph)
    return graph


def nchw_float_graph() -> Graph:
    graph = Graph("nchw")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 2, 2))
    graph.outputs = [graph.add_node("Reshape", [x], {"shape": (1, 12)}, name="flat").outputs[0]]
    verify(graph)
    return graph


def test_default_range_from_the_quantized_input(tmp_path):
    low, high = default_range(nhwc_int8_graph())       # 0.5 * (-128 + 10), 0.5 * (127 + 10)
    assert (low, high) == (-59.0, 68.5)
    assert default_range(qdq_graph()) == (0.5 * (-128 - 3), 0.5 * (127 - 3))
    assert default_range(load_model(tiny_pair(tmp_path)[0])) == DEFAULT_RANGE


def test_quantized_feeds_transpose_and_quantize():
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 2, 2) - 5.2   # one NCHW sample
    feeds = quantized_feeds(nchw_float_graph(), nhwc_int8_graph(), Samples({"x": x}, True, "test"))
    expected = np.clip(np.rint(np.moveaxis(x, 2, -1) / 0.5) - 10, -128, 127).astype(np.int8)
    assert feeds["x"].dtype == np.int8 and feeds["x"].shape == (1, 1, 2, 2, 3)
    np.testing.assert_array_equal(feeds["x"], expected)


def test_models_that_do_not_pair_are_refused(tmp_path):
    with pytest.raises(UsageError, match="does not match"):
        check_models(load_model(tiny_pair(tmp_path)[0]), nhwc_int8_graph())
    with pytest.raises(UsageError, match="not quantized"):
        validate_models(nchw_float_graph(), nchw_float_graph(), Samples({}, True, "-"))


def test_an_autoencoder_output_gets_no_top_k():
    """MLPerf Tiny's anomaly detector maps 640 values to 640: a reconstruction, not class
    scores, so validate reports no top-1 / top-5 (a 10-class output of the same shape
    kind keeps them, see test_validate_metrics)."""
    from conftest import shared_model
    from mcudeploy.validate.data import random_samples

    float_graph = load_model(shared_model("mlperf_tiny/fc_autoencoder_float.tflite"))
    quantized = load_model(shared_model("mlperf_tiny/fc_autoencoder_int8.tflite"))
    samples = random_samples(float_graph, 4, 0, DEFAULT_RANGE)
    result = validate_models(float_graph, quantized, samples, progress=False)
    assert [m.top1_agreement for m in result.metrics] == [None]
    assert [c.metric for c in result.checks] == ["cosine"]
