"""Models the tiling / split tests share: U-Nets (tools/make_unet.py) and MobileNetV2 0.5
quantized by mcudeploy's own quantizer (int8 inputs and outputs), the deployable graphs of the
shared int8 models, and the comparison with the untiled integer reference."""
from __future__ import annotations

import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from conftest import REPO, shared_model
from mcudeploy.driver import deployable_graph, load_graph
from mcudeploy.importers import load_model
from mcudeploy.quantize.apply import quantize_graph
from mcudeploy.quantize.calibration import calibrate, load_calibration
from mcudeploy.quantize.observers import observed_range
from mcudeploy.quantize.prepare import prepare_for_quantization
from mcudeploy.quantize.quantizer import QuantizationConfig, _options
from mcudeploy.reference import run_int


def quantize_int8_io(graph, input_shape, samples: int = 2):
    """mcudeploy's PTQ with int8 graph inputs and outputs (the stages of quantize_model, without
    its float report, which does not take int8 inputs yet)."""
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(input_shape).astype(np.float32) for _ in range(samples)]
    config = QuantizationConfig(progress=False, int8_io=True)
    prepared = prepare_for_quantization(graph)
    observed = calibrate(prepared, load_calibration(data, prepared), progress=False)
    ranges = {name: observed_range(sample, config.observer) for name, sample in observed.items()}
    return quantize_graph(prepared, ranges, _options(config)).graph


@lru_cache(maxsize=4)
def _unet(size: int):
    sys.path.insert(0, str(REPO / "tools"))
    import onnx

    from make_unet import make_unet
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"unet{size}.onnx"
        onnx.save(make_unet(size), path)
        graph = load_model(path)
    return deployable_graph(quantize_int8_io(graph, (1, 1, size, size), samples=1))


def unet(size: int):
    """The int8 U-Net of ``size`` (deployable graph, a fresh copy)."""
    return _unet(size).copy()


@lru_cache(maxsize=1)
def _mobilenet_v2():
    graph = load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx"))
    return deployable_graph(quantize_int8_io(graph, (1, 3, 128, 128), samples=4))


def mobilenet_v2():
    return _mobilenet_v2().copy()


def shared_int8(model: str):
    return deployable_graph(load_graph(shared_model(model)))


def random_feeds(graph, count: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {v.name: rng.integers(-128, 128, (count, *v.shape)).astype(np.int8) for v in graph.inputs}


def assert_same_outputs(untiled, tiled, feeds) -> None:
    """``tiled`` gives the untiled integer reference's outputs byte for byte."""
    expected, got = run_int(untiled, feeds, batch=True), run_int(tiled, feeds, batch=True)
    assert set(expected) == set(got)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
