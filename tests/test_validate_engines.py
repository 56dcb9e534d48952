"""Engines: the registry, graph precision classes, and what each engine refuses."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import precision
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.engines import ENGINES, default_engine, engine, get_engine
from validate_pairs import qdq_graph, tiny_pair


def test_precision_classes(tmp_path):
    float_path, int8_path = tiny_pair(tmp_path)
    assert precision(load_model(float_path)) == "float"
    assert precision(load_model(int8_path)) == "integer"
    assert precision(qdq_graph()) == "qdq"
    assert default_engine(load_model(float_path)) == "float"
    assert default_engine(load_model(int8_path)) == "int"


def test_float_engine_runs_qdq_as_fake_quantization():
    x = np.array([[[-1.0, 0.3, 1.2, 100.0]]], np.float32)   # one sample
    result = ENGINES["float"].run(qdq_graph(), {"x": x})["relu"]
    # q = clamp(round(x / 0.5) + 3, -128, 127) -> [1, 4, 5, 127]; r = 0.5 * (q - 3) -> relu
    np.testing.assert_array_equal(result, [[[0.0, 0.5, 1.0, 62.0]]])


def test_engines_refuse_the_wrong_kind_of_model(tmp_path):
    float_path, int8_path = tiny_pair(tmp_path)
    with pytest.raises(UsageError, match="quantize it first with mcudeploy quantize"):
        ENGINES["int"].run(load_model(float_path), {"x": np.zeros((1, 1, 6, 6, 2), np.float32)})
    with pytest.raises(UsageError, match="full-integer quantized model"):
        ENGINES["float"].run(load_model(int8_path), {"x": np.zeros((1, 1, 6, 6, 2), np.int8)})
    with pytest.raises(UsageError, match="unknown engine; choose one of float, int"):
        get_engine("tpu-v9")


def test_int_engine_is_run_int_batched(tmp_path):
    graph = load_model(tiny_pair(tmp_path)[1])
    x = np.random.default_rng(0).integers(-128, 128, (3, 1, 6, 6, 2)).astype(np.int8)
    ours = ENGINES["int"].run(graph, {"x": x})["logits"]
    assert ours.dtype == np.int8 and ours.shape == (3, 1, 5)
    np.testing.assert_array_equal(ours, run_int(graph, {"x": x}, batch=True)["logits"])


def test_registering_an_engine(monkeypatch):
    monkeypatch.setattr("mcudeploy.validate.engines.ENGINES", dict(ENGINES))
    from mcudeploy.validate import engines as module

    @engine("echo", "returns its feeds")
    def echo(graph, feeds, *, capture=False):
        return dict(feeds)

    assert module.ENGINES["echo"].run(None, {"a": 1}) == {"a": 1}
    assert "echo" not in ENGINES


def test_qemu_run_without_target_builds_the_board_cores_kernels():
    """validate --on qemu-m4 / run --engine qemu-m55 without --target build for the emulated
    board's target (the firmware's kernels, not the portable ones) and say so."""
    from mcudeploy.driver import deploy
    from mcudeploy.options import DeploymentOptions
    from mcudeploy.validate.generated_code import build_summary, options_for_run

    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    for on, board, family in (("qemu-m4", "mps2-an386", "dsp-conv"), ("qemu-m55", "mps3-an547", "mve-conv")):
        options, defaulted = options_for_run(DeploymentOptions(), on)
        assert defaulted and options.target == board
        deployment = deploy(model, options)
        assert family in deployment.kernels.counts()
        line = build_summary(deployment, on, defaulted)
        assert f"target {board}" in line and family in line and "give --target" in line
    given, defaulted = options_for_run(DeploymentOptions(target="stm32h743"), "qemu-m4")
    assert given.target == "stm32h743" and not defaulted
    host, defaulted = options_for_run(DeploymentOptions(), "host")
    assert host.target is None and not defaulted
