"""Quantizing tiny float graphs built in code: structure of the quantized IR, then numbers
against the float reference (bit-exact integer executor vs float executor)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import require
from mcudeploy.errors import UsageError
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.quantize.apply import QuantizeOptions, quantize_graph
from mcudeploy.quantize.calibration import calibrate
from mcudeploy.quantize.metrics import cosine
from mcudeploy.quantize.observers import observed_range
from mcudeploy.quantize.prepare import prepare_for_quantization
from mcudeploy.reference import run_float
from mcudeploy.reference.int_executor import run_int

RNG = np.random.default_rng(0)


def _const(graph: Graph, name: str, shape, scale=0.3, rng=None):
    rng = RNG if rng is None else rng
    return graph.add_constant(name, (rng.standard_normal(shape) * scale).astype(np.float32))


def small_cnn() -> Graph:
    """NCHW input -> Conv+BN-free+Relu -> MaxPool -> Conv (no act) -> Add(skip) -> Relu ->
    GlobalAveragePool -> Flatten -> MatMul + Add -> Softmax.

    Its weights come from a generator of its own, so they are the same whichever tests ran
    before (a shared generator made them depend on test order: CI drew a different network
    from the one a test run alone draws)."""
    rng = np.random.default_rng(0)
    graph = Graph("small_cnn")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 12, 12), layout="NCHW")
    conv1 = graph.add_node("Conv", [x, _const(graph, "w1", (8, 3, 3, 3), rng=rng), _const(graph, "b1", (8,), rng=rng)],
                           {"pads": (1, 1, 1, 1)}, name="conv1")
    relu1 = graph.add_node("Relu", [conv1.outputs[0]], name="relu1")
    pool = graph.add_node("MaxPool", [relu1.outputs[0]], {"kernel_shape": (2, 2), "strides": (2, 2)},
                          name="pool")
    conv2 = graph.add_node("Conv", [pool.outputs[0], _const(graph, "w2", (8, 8, 1, 1), rng=rng),
                                    _const(graph, "b2", (8,), rng=rng)], name="conv2")
    add = graph.add_node("Add", [conv2.outputs[0], pool.outputs[0]], name="add")
    relu2 = graph.add_node("Relu", [add.outputs[0]], name="relu2")
    gap = graph.add_node("GlobalAveragePool", [relu2.outputs[0]], name="gap")
    flat = graph.add_node("Flatten", [gap.outputs[0]], name="flat")
    matmul = graph.add_node("MatMul", [flat.outputs[0], _const(graph, "fc_w", (8, 5), rng=rng)], name="fc")
    bias = graph.add_node("Add", [matmul.outputs[0], _const(graph, "fc_b", (5,), rng=rng)], name="fc_bias")
    soft = graph.add_node("Softmax", [bias.outputs[0]], name="softmax", output_names=["probs"])
    graph.outputs = [soft.outputs[0]]
    verify(graph)
    return graph


def samples(graph: Graph, count: int = 24, seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    value = graph.inputs[0]
    return [{value.name: rng.standard_normal(value.shape).astype(np.float32)} for _ in range(count)]


def quantized(graph: Graph, options: QuantizeOptions = QuantizeOptions(), method: str = "minmax"):
    prepared = prepare_for_quantization(graph)
    observed = calibrate(prepared, samples(prepared), progress=False)
    ranges = {name: observed_range(sample, method) for name, sample in observed.items()}
    return prepared, quantize_graph(prepared, ranges, options)


@pytest.fixture(scope="module")
def cnn():
    return quantized(small_cnn())


def test_conv_weights_int8_per_channel_and_bias_int32_with_product_scale(cnn):
    _, result = cnn
    graph = result.graph
    convs = [n for n in graph.nodes if n.op in ("Conv", "Gemm")]
    assert len(convs) == 3 and not result.float_nodes
    for node in convs:
        x, weights, bias = node.inputs
        assert weights.dtype == DType.INT8 and weights.quant.axis == 0
        assert weights.quant.scale.size == weights.shape[0] and not weights.quant.zero_point.any()
        assert np.abs(weights.const.astype(int)).max() <= 127
        assert bias.dtype == DType.INT32 and not bias.quant.zero_point.any()
        expected = (np.float64(x.quant.scale[0]) * weights.quant.scale.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(bias.quant.scale, expected)
        assert node.outputs[0].dtype == DType.INT8 and x.dtype == DType.INT8
    assert convs[0].attrs["layout"] == "NHWC"


def test_edges_quantize_and_dequantize_and_keep_names(cnn):
    _, result = cnn
    graph = result.graph
    assert graph.inputs[0].dtype == DType.FLOAT32 and graph.inputs[0].name == "x"
    assert graph.nodes[0].op == "QuantizeLinear"
    assert graph.outputs[0].name == "probs" and graph.outputs[0].dtype == DType.FLOAT32
    assert graph.outputs[0].producer.op == "DequantizeLinear"


def test_tflite_op_constraints(cnn):
    _, result = cnn
    nodes = {n.name: n for n in result.graph.nodes}
    softmax = nodes["softmax"].outputs[0].quant
    assert float(softmax.scale[0]) == 1 / 256 and int(softmax.zero_point[0]) == -128
    pool = nodes["pool"]
    assert pool.inputs[0].quant == pool.outputs[0].quant
    for node in result.graph.nodes:
        if node.op in ("Reshape", "Flatten", "MaxPool"):
            assert node.inputs[0].quant == node.outputs[0].quant, node.name


def test_quantized_output_matches_float(cnn):
    prepared, result = cnn
    for feeds in samples(prepared, 6, seed=7):
        expected = run_float(prepared, feeds)["probs"]
        got = run_int(result.graph, feeds)["probs"]
        assert cosine(expected, got) > 0.99
        assert np.abs(expected - got).max() < 0.05


def test_bias_dequantizes_to_the_float_bias(cnn):
    prepared, result = cnn
    float_bias = {n.name: n.input(2).const for n in prepared.nodes if n.op in ("Conv", "Gemm")}
    for node in result.graph.nodes:
        if node.name in float_bias:
            bias = node.inputs[2]
            np.testing.assert_allclose(bias.quant.dequantize(bias.const), float_bias[node.name],
                                       atol=float(bias.quant.scale.max()))


def test_keep_float_node_gets_dequantize_before_and_quantize_after():
    prepared, result = quantized(small_cnn(), QuantizeOptions(keep_float=frozenset({"conv2"})))
    node = result.graph.node("conv2")
    assert node.outputs[0].dtype == DType.FLOAT32 and node.inputs[1].dtype == DType.FLOAT32
    assert node.inputs[0].producer.op == "DequantizeLinear"
    assert {user.op for user in node.outputs[0].users} == {"QuantizeLinear"}
    assert result.float_nodes == ["conv2"]
    from mcudeploy.quantize.simulate import run_quantized, stack_samples
    feeds = stack_samples(samples(prepared, 4, seed=9))
    got = run_quantized(result.graph, feeds)["probs"]
    expected = np.stack([run_float(prepared, {"x": f})["probs"] for f in feeds["x"]])
    assert cosine(expected, got) > 0.99


def test_int16_node_runs_16x8_with_int64_bias():
    prepared, result = quantized(small_cnn(), QuantizeOptions(int16=frozenset({"conv2"})))
    node = result.graph.node("conv2")
    assert node.inputs[0].dtype == DType.INT16 and int(node.inputs[0].quant.zero_point[0]) == 0
    assert node.outputs[0].dtype == DType.INT16 and node.inputs[2].dtype == DType.INT64
    assert node.inputs[1].dtype == DType.INT8
    feeds = samples(prepared, 1, seed=3)[0]
    assert cosine(run_float(prepared, feeds)["probs"], run_int(result.graph, feeds)["probs"]) > 0.99


def test_per_tensor_option_gives_one_weight_scale():
    _, result = quantized(small_cnn(), QuantizeOptions(per_channel=False))
    for node in result.graph.nodes:
        if node.op in ("Conv", "Gemm"):
            assert node.inputs[1].quant.axis is None and node.inputs[1].quant.scale.size == 1


def test_matmul_and_bias_add_become_gemm():
    prepared = prepare_for_quantization(small_cnn())
    ops = [n.op for n in prepared.nodes]
    assert "MatMul" not in ops and "GlobalAveragePool" not in ops
    gemm = prepared.node("fc")
    assert gemm.op == "Gemm" and gemm.attrs["transB"] == 1 and gemm.input(2) is not None


def test_concat_inputs_share_the_output_parameters():
    graph = Graph("concat")
    x = graph.add_input("x", DType.FLOAT32, (1, 6, 6, 2), layout="NHWC")
    a = graph.add_node("Conv", [x, _const(graph, "wa", (3, 1, 1, 2)), None], {"layout": "NHWC"}, name="a")
    b = graph.add_node("Conv", [x, _const(graph, "wb", (4, 1, 1, 2), 3.0), None], {"layout": "NHWC"},
                       name="b")
    cat = graph.add_node("Concat", [a.outputs[0], b.outputs[0]], {"axis": 3}, name="cat")
    graph.outputs = [cat.outputs[0]]
    prepared, result = quantized(graph)
    node = result.graph.node("cat")
    assert node.inputs[0].quant == node.inputs[1].quant == node.outputs[0].quant


def test_standalone_relu_becomes_a_requantize_whose_saturation_is_the_clamp():
    graph = Graph("relu")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 4, 2), layout="NHWC")
    cat = graph.add_node("Concat", [x, x], {"axis": 3}, name="cat")
    relu = graph.add_node("Relu", [cat.outputs[0]], name="relu")
    graph.outputs = [relu.outputs[0]]
    prepared, result = quantized(graph)
    node = result.graph.node("relu")
    assert node.op == "QuantizeLinear" and node.inputs[0].dtype == DType.INT8
    assert int(node.outputs[0].quant.zero_point[0]) == -128
    feeds = samples(prepared, 1, seed=5)[0]
    got = run_int(result.graph, feeds)[prepared.outputs[0].name]
    expected = np.maximum(np.concatenate([feeds["x"]] * 2, axis=3), 0)
    assert got.min() == 0.0
    # input rounding (half an input step) + output rounding (half an output step)
    tolerance = (float(node.inputs[0].quant.scale[0]) + float(node.outputs[0].quant.scale[0])) / 2
    np.testing.assert_allclose(got, expected, atol=tolerance + 1e-6)


def test_unknown_node_names_are_usage_errors():
    with pytest.raises(UsageError, match="no node named 'nope'"):
        quantized(small_cnn(), QuantizeOptions(keep_float=frozenset({"nope"})))


def test_int8_io_keeps_integer_inputs_and_outputs():
    _, result = quantized(small_cnn(), QuantizeOptions(int8_io=True))
    assert result.graph.inputs[0].dtype == DType.INT8 and result.graph.inputs[0].quant is not None
    assert result.graph.outputs[0].dtype == DType.INT8
    assert not any(n.op == "DequantizeLinear" for n in result.graph.nodes)


@pytest.mark.parametrize("options,conv_axis,gemm_axis", [
    (QuantizeOptions(), 0, 0),
    (QuantizeOptions(weights="per-channel"), 0, 0),
    (QuantizeOptions(weights="per-tensor"), None, None),
    (QuantizeOptions(per_channel=False), None, None),          # the older spelling
    (QuantizeOptions(weights="tflite"), 0, None),               # TFLite: conv per channel, FC per tensor
], ids=["default", "per-channel", "per-tensor", "per_channel=False", "tflite"])
def test_weight_granularity_per_op_kind(options, conv_axis, gemm_axis):
    prepared, result = quantized(small_cnn(), options)
    weighted = {node.op: node for node in result.graph.nodes if node.op in ("Conv", "Gemm")}
    for op, axis in (("Conv", conv_axis), ("Gemm", gemm_axis)):
        weights = weighted[op].inputs[1]
        assert weights.quant.axis == axis, op
        assert weights.quant.scale.size == (weights.shape[0] if axis == 0 else 1), op
        peaks = np.abs(prepared.node(weighted[op].name).inputs[1].const).reshape(weights.shape[0], -1)
        expected = peaks.max(axis=1) if axis == 0 else peaks.max(keepdims=True).reshape(1)
        np.testing.assert_allclose(weights.quant.scale, expected / 127, rtol=1e-6)
    assert result.graph.metadata["quantization"]["weights"] == options.granularity
    feeds = samples(prepared, 1, seed=11)[0]
    assert cosine(run_float(prepared, feeds)["probs"], run_int(result.graph, feeds)["probs"]) > 0.99


def test_unknown_weight_granularity_is_a_usage_error():
    with pytest.raises(UsageError, match="per-channel, per-tensor, tflite"):
        quantized(small_cnn(), QuantizeOptions(weights="per-row"))


@pytest.mark.parametrize("arguments,expected", [([], "per-channel"), (["--weights", "tflite"], "tflite"),
                                                (["--weights", "per-tensor"], "per-tensor"),
                                                (["--per-tensor"], "per-tensor")])
def test_cli_weights_option(arguments, expected):
    from mcudeploy.cli.main import build_parser

    args = build_parser().parse_args(["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", *arguments])
    assert args.weights == expected


@pytest.mark.slow
def test_entropy_observer_is_as_good_as_minmax_on_mobilenet_v1_vww():
    """The KL search used to cut the sparse post-ReLU tensors of this model to an eighth of
    their range (activation_24: [0, 7.89] -> [0, 0.99]; output cosine 0.94 vs 0.998)."""
    import sys
    from pathlib import Path

    from conftest import shared_model
    from mcudeploy.importers import load_model

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import mlperf_ptq_bench as mlperf

    require("skimage")
    float_path = shared_model("mlperf_tiny/mobilenetv1_vww_float.tflite")
    float_graph = load_model(float_path)
    int8_graph = load_model(shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite"))
    benchmark = mlperf.BENCHMARKS[1]
    calibration, evaluation = mlperf.datasets(benchmark, float_graph, int8_graph, 60, 30)
    prepared, observed, _ = mlperf.calibrated(float_graph, calibration)
    reference = mlperf.litert_outputs(float_path, evaluation)
    scores = {}
    for method in ("minmax", "entropy"):
        ranges = {name: observed_range(sample, method) for name, sample in observed.items()}
        graph = quantize_graph(prepared, ranges).graph
        scores[method] = cosine(reference, mlperf.our_outputs(graph, evaluation))
    assert scores["minmax"] > 0.99
    assert scores["entropy"] >= scores["minmax"] - 0.005, scores
