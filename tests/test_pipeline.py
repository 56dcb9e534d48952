"""The outer pipeline (:mod:`mcudeploy.pipeline`) on a tiny float model built in code:
quantize -> comparable -> validation samples -> validate -> deploy -> generate -> verify, each
result checked for structure, then its numbers against an independent computation (numpy's
cosine over the outputs, the integer reference for the generated code, the codegen's own
files)."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy import pipeline
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, precision, verify
from mcudeploy.options import DeploymentOptions
from mcudeploy.quantize.quantizer import QuantizationConfig
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.thresholds import Thresholds


def _float_model() -> Graph:
    """x [1, 16] -> Gemm (8 units) -> Relu -> Gemm (4 units)."""
    rng = np.random.default_rng(3)
    graph = Graph("tiny")
    x = graph.add_input("x", DType.FLOAT32, (1, 16))
    w1 = graph.add_constant("w1", rng.normal(0, 0.4, (8, 16)).astype(np.float32))
    b1 = graph.add_constant("b1", rng.normal(0, 0.1, 8).astype(np.float32))
    w2 = graph.add_constant("w2", rng.normal(0, 0.4, (4, 8)).astype(np.float32))
    b2 = graph.add_constant("b2", rng.normal(0, 0.1, 4).astype(np.float32))
    (hidden,) = graph.add_node("Gemm", [x, w1, b1], {"transB": 1}, name="fc1", output_names=["h"]).outputs
    (relu,) = graph.add_node("Relu", [hidden], {}, name="relu", output_names=["r"]).outputs
    (out,) = graph.add_node("Gemm", [relu, w2, b2], {"transB": 1}, name="fc2", output_names=["y"]).outputs
    graph.outputs = [out]
    verify(graph)
    return graph


@pytest.fixture(scope="module")
def quantized_pair():
    graph = _float_model()
    calibration = [{"x": sample} for sample in np.random.default_rng(0).uniform(-1, 1, (16, 1, 16)).astype(np.float32)]
    outcome = pipeline.quantize(graph, calibration, QuantizationConfig(progress=False, evaluation_samples=4))
    return graph, pipeline.comparable(graph, outcome.graph)


def test_quantize_and_comparable_give_the_integer_form(quantized_pair):
    graph, quantized = quantized_pair
    verify(quantized)
    assert precision(graph) == "float" and precision(quantized) == "integer"
    assert [v.name for v in quantized.outputs] == [v.name for v in graph.outputs]


def test_validation_samples_random_and_head(quantized_pair, tmp_path):
    graph, quantized = quantized_pair
    samples = pipeline.validation_samples(graph, quantized, data=None, count=6, seed=0, value_range=(-0.5, 0.5))
    assert samples.count == 6 and samples.arrays["x"].shape == (6, 1, 16)
    assert -0.5 <= samples.arrays["x"].min() and samples.arrays["x"].max() <= 0.5
    path = tmp_path / "data.npy"
    np.save(path, samples.arrays["x"])
    assert pipeline.validation_samples(graph, quantized, data=path, count=4, seed=0).count == 4
    np.testing.assert_array_equal(pipeline.validation_samples(graph, quantized, data=path, count=None,
                                                              seed=0).arrays["x"], samples.arrays["x"])


def test_validate_worst_metrics_match_numpy(quantized_pair):
    graph, quantized = quantized_pair
    samples = pipeline.validation_samples(graph, quantized, data=None, count=8, seed=1)
    result = pipeline.validate(graph, quantized, samples, layer_samples=2)
    worst = pipeline.Worst.of(result)
    reference, candidate = result.float_outputs["y"].ravel(), result.quantized_outputs["y"].ravel()
    cosine = float(reference @ candidate / (np.linalg.norm(reference) * np.linalg.norm(candidate)))
    assert worst.cosine == pytest.approx(cosine, abs=0.02) and worst.cosine > 0.9
    assert result.passed and result.layers is not None          # the per-layer plot of 2 samples


def test_a_failed_validation_is_explained(quantized_pair):
    graph, quantized = quantized_pair
    samples = pipeline.validation_samples(graph, quantized, data=None, count=4, seed=2)
    result = pipeline.validate(graph, quantized, samples, thresholds=Thresholds(cosine_min=1.0 + 1e-9), explain=True)
    assert not result.passed and result.layers is not None     # compared again, layer by layer
    message = pipeline.failure_message(result)
    assert message.startswith("validation FAILED: cosine of output 'y'") and "jumps" not in message
    assert pipeline.failure_message(result, explained=True).startswith(message)


def test_generate_writes_the_codegen_files_and_memory_use_sums_the_ledger(quantized_pair, tmp_path):
    _, quantized = quantized_pair
    deployment = deploy(quantized, DeploymentOptions(target="stm32h743"))
    generated = pipeline.generate(deployment, ProjectOptions(), folder=tmp_path / "code")
    assert generated.files == generate_files(deployment, ProjectOptions())
    assert {path.relative_to(tmp_path / "code").as_posix() for path in generated.written} == set(generated.files)
    assert pipeline.generate(deployment).written == []
    use = pipeline.memory_use(deployment)
    assert sum(use.values()) == sum(region.used for region in deployment.ledger.regions)


def test_test_vectors_are_the_integer_reference(quantized_pair):
    _, quantized = quantized_pair
    deployment = deploy(quantized, DeploymentOptions())
    feeds = pipeline.integer_feeds(deployment, 3, seed=0)
    vectors = pipeline.test_vectors(deployment.graph, feeds, "random")
    expected = run_int(deployment.graph, feeds, batch=True)
    assert vectors.source == "random" and set(vectors.outputs) == set(expected)
    for name, array in expected.items():
        np.testing.assert_array_equal(vectors.outputs[name], array)


def test_integer_feeds_quantize_float_samples(quantized_pair):
    graph, quantized = quantized_pair
    deployment = deploy(quantized, DeploymentOptions())
    samples = pipeline.validation_samples(graph, quantized, data=None, count=5, seed=3)
    feeds = pipeline.integer_feeds(deployment, 2, seed=0, float_graph=graph, samples=samples)
    value = deployment.graph.inputs[0]
    assert feeds[value.name].shape == (2, 1, 16) and feeds[value.name].dtype == value.dtype.numpy


def test_missing_tools_reads_the_path(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert pipeline.missing_tools() == ["arm-none-eabi-gcc", "qemu-system-arm", "make"]


def test_verify_on_the_host_is_bit_exact(quantized_pair):
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    _, quantized = quantized_pair
    deployment = deploy(quantized, DeploymentOptions())
    check = pipeline.verify(deployment, pipeline.integer_feeds(deployment, 2, seed=0), "host")
    assert check.bit_exact and check.samples == 2
