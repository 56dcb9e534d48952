"""``quantize -o MODEL.tflite``: the full-integer TFLite flatbuffer mcudeploy writes
(:mod:`mcudeploy.exporters.tflite_writer`) runs in TensorFlow Lite Micro with exactly the
outputs of mcudeploy's own integer engine, for the MNIST-style CNN of the tests, a shared
float model quantized by mcudeploy (ResNet-8) and a graph of the awkward cases (depthwise,
padding TFLite cannot call SAME, pooling, concat, resize, softmax); it imports back into the
same numbers; what TFLite cannot express is refused by name."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main as cli_main
from mcudeploy.errors import UnsupportedError
from mcudeploy.exporters.tflite_writer import to_tflite
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.quantize import QuantizationConfig, quantize_model
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.references import tflm_interpreter, tflm_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import train_mnist_cnn as mnist  # noqa: E402

TFLITE = QuantizationConfig(progress=False, tflite_rounding=True)


def _tflm(graph: Graph, path: Path, samples: np.ndarray) -> np.ndarray:
    path.write_bytes(to_tflite(graph))
    return tflm_run(tflm_interpreter(path), samples)


def _ours(graph: Graph, samples: np.ndarray) -> np.ndarray:
    return np.asarray(run_int(graph, {graph.inputs[0].name: samples}, batch=True)[graph.outputs[0].name])


def _bits(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, np.float32).view(np.uint32)


@pytest.fixture(scope="module")
def mnist_model(tmp_path_factory):
    import onnx
    path = tmp_path_factory.mktemp("mnist") / "mnist_cnn.onnx"
    onnx.save(mnist.to_onnx(mnist.init_params(0)), str(path))
    return load_model(path), mnist.mnist_splits()


@pytest.mark.slow        # the MNIST data set (module fixture) takes ~15 s to make
def test_mnist_cnn_runs_in_tflite_micro_like_our_engine(mnist_model, tmp_path):
    graph, splits = mnist_model
    outcome = quantize_model(graph, list(splits.calibration_x[:40, None]), TFLITE)
    ops = {node.op for node in outcome.graph.nodes}
    assert {"Conv", "MaxPool", "Gemm", "QuantizeLinear", "DequantizeLinear"} <= ops
    images = splits.test_x[:32, None].astype(np.float32)
    # inputs exactly halfway between two quantization steps: TFLite rounds them away from zero
    scale = float(outcome.graph.nodes[0].outputs[0].quant.scale[0])
    ties = (np.float32(np.arange(784) % 200 + 0.5) * np.float32(scale)).reshape(1, 1, 1, 28, 28)
    samples = np.concatenate([images, ties.astype(np.float32)])
    expected = _tflm(outcome.graph, tmp_path / "mnist_int8.tflite", samples)
    assert expected.dtype == np.float32 and len(np.unique(expected)) > 50
    assert np.array_equal(_bits(_ours(outcome.graph, samples).reshape(expected.shape)), _bits(expected))
    back = load_model(tmp_path / "mnist_int8.tflite")
    assert np.array_equal(_bits(_ours(back, samples).reshape(expected.shape)), _bits(expected))


@pytest.mark.slow
def test_resnet8_quantized_by_mcudeploy_runs_in_tflite_micro_like_our_engine(tmp_path):
    graph = load_model(shared_model("mlperf_tiny/resnet8_float.tflite"))
    rng = np.random.default_rng(0)
    calibration = [rng.uniform(0, 255, (1, 32, 32, 3)).astype(np.float32) for _ in range(16)]
    outcome = quantize_model(graph, calibration, TFLITE)
    samples = rng.uniform(0, 255, (4, 1, 32, 32, 3)).astype(np.float32)
    expected = _tflm(outcome.graph, tmp_path / "resnet8_int8.tflite", samples)
    assert np.array_equal(_bits(_ours(outcome.graph, samples).reshape(expected.shape)), _bits(expected))


def awkward_graph() -> Graph:
    """Float NHWC graph: depthwise conv, a conv with pads TFLite cannot call SAME, max pool,
    concat, nearest resize, average pool, softmax."""
    rng = np.random.default_rng(5)
    graph = Graph("awkward")
    x = graph.add_input("x", DType.FLOAT32, (1, 8, 8, 4), layout="NHWC")

    def conv(value, out_channels, group, pads, name):
        weights = graph.add_constant(f"{name}_w", rng.standard_normal((out_channels, 3, 3, 4 // group)).astype(np.float32))
        bias = graph.add_constant(f"{name}_b", rng.standard_normal(out_channels).astype(np.float32))
        return graph.add_node("Conv", [value, weights, bias], {"layout": "NHWC", "group": group, "pads": pads,
                                                               "activation_min": 0.0}, name=name).outputs[0]

    depthwise = conv(x, 4, 4, [1, 1, 1, 1], "depthwise")
    shifted = conv(x, 4, 1, [2, 0, 0, 2], "shifted")
    pooled = graph.add_node("MaxPool", [depthwise], {"layout": "NHWC", "kernel_shape": [2, 2], "strides": [2, 2]},
                            name="pool").outputs[0]
    resized = graph.add_node("Resize", [pooled], {"sizes": [1, 8, 8, 4], "mode": "nearest",
                                                  "coordinate_transformation_mode": "asymmetric",
                                                  "nearest_mode": "floor"}, name="resize").outputs[0]
    joined = graph.add_node("Concat", [resized, shifted], {"axis": 3}, name="concat").outputs[0]
    averaged = graph.add_node("AveragePool", [joined], {"layout": "NHWC", "kernel_shape": [8, 8]},
                              name="average").outputs[0]
    flat = graph.add_node("Reshape", [averaged], {"shape": [1, 8]}, name="flatten").outputs[0]
    graph.outputs = [graph.add_node("Softmax", [flat], name="softmax").outputs[0]]
    verify(graph)
    return graph


def test_awkward_ops_run_in_tflite_micro_like_our_engine(tmp_path):
    rng = np.random.default_rng(6)
    outcome = quantize_model(awkward_graph(), [rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
                                               for _ in range(16)], TFLITE)
    samples = rng.standard_normal((6, 1, 8, 8, 4)).astype(np.float32)
    expected = _tflm(outcome.graph, tmp_path / "awkward.tflite", samples)
    assert np.array_equal(_bits(_ours(outcome.graph, samples).reshape(expected.shape)), _bits(expected))
    back = load_model(tmp_path / "awkward.tflite")
    assert {"Pad", "Conv"} <= {node.op for node in back.nodes}     # the shifted conv got an explicit PAD


@pytest.mark.slow        # the MNIST data set (module fixture) takes ~15 s to make
def test_cli_writes_a_tflite_file(mnist_model, tmp_path):
    graph, splits = mnist_model
    data = tmp_path / "calibration.npz"
    np.savez(data, **{mnist.INPUT_NAME: splits.calibration_x[:20, None]})
    model = tmp_path / "model.onnx"
    import onnx
    onnx.save(mnist.to_onnx(mnist.init_params(0)), str(model))
    assert cli_main(["quantize", str(model), "--calib", str(data), "-o", str(tmp_path / "q.tflite")]) == 0
    samples = splits.test_x[:8, None].astype(np.float32)
    written = load_model(tmp_path / "q.tflite")
    assert np.array_equal(tflm_run(tflm_interpreter(tmp_path / "q.tflite"), samples),
                          _ours(written, samples).reshape(8, 1, 10))


@pytest.mark.slow        # the MNIST data set (module fixture) takes ~15 s to make
def test_what_tflite_cannot_express_is_refused_by_name(mnist_model):
    graph, splits = mnist_model
    calibration = list(splits.calibration_x[:8, None])
    onnx_rounding = quantize_model(graph, calibration, QuantizationConfig(progress=False)).graph
    with pytest.raises(UnsupportedError, match="rounds halves to even"):
        to_tflite(onnx_rounding)
    first_conv = next(node.name for node in onnx_rounding.nodes if node.op == "Conv")
    mixed = quantize_model(graph, calibration, QuantizationConfig(progress=False, tflite_rounding=True,
                                                                  keep_float=(first_conv,))).graph
    with pytest.raises(UnsupportedError, match=f"mixed graph .*{first_conv}"):
        to_tflite(mixed)


def test_int8_io_model_written_by_quantize_runs_in_tflite_micro_like_our_engine(tmp_path):
    """``quantize --int8-io -o x.tflite`` of the bundled example: int8 in, int8 out, in
    TFLite Micro exactly as in our engine."""
    example = Path(__file__).resolve().parents[1] / "examples" / "kws_cnn.onnx"
    rng = np.random.default_rng(7)
    np.savez(tmp_path / "calibration.npz", input=rng.normal(0, 1, (8, 1, 1, 49, 10)).astype(np.float32))
    written = tmp_path / "kws_int8_io.tflite"
    assert cli_main(["quantize", str(example), "--calib", str(tmp_path / "calibration.npz"), "--int8-io",
                     "-o", str(written)]) == 0
    graph = load_model(written)
    assert graph.inputs[0].dtype == DType.INT8 and graph.outputs[0].dtype == DType.INT8
    samples = rng.integers(-128, 128, (6, *graph.inputs[0].shape)).astype(np.int8)
    expected = tflm_run(tflm_interpreter(written), samples)
    assert expected.dtype == np.int8 and len(np.unique(expected)) > 5
    assert np.array_equal(_ours(graph, samples).reshape(expected.shape), expected)
