"""The float forward on onnxruntime (exporters/onnx_run.py) against the numpy forward
(quantize/forward.py, itself tested against the float reference): every value, same shape,
within float32 rounding; calibration ranges through either agree; and the fallbacks
(onnxruntime missing, too large, not exportable) give the numpy forward."""
from __future__ import annotations

import sys
from functools import partial

import numpy as np
import pytest

from conftest import REPO, shared_model
from mcudeploy.exporters import onnx_run
from mcudeploy.importers import load_model
from mcudeploy.quantize.calibration import calibrate
from mcudeploy.quantize.forward import float_runner, forward
from mcudeploy.quantize.prepare import prepare_for_quantization


def _unet(tmp_path, upsample: str):
    import onnx
    sys.path.insert(0, str(REPO / "tools"))
    from make_unet import make_unet
    path = tmp_path / "unet.onnx"
    onnx.save(make_unet(32, upsample=upsample, head="sigmoid", resize_attributes="default"), path)
    return load_model(path)


MODELS = {
    "kws_cnn": lambda tmp_path: load_model(REPO / "examples" / "kws_cnn.onnx"),
    "mobilenetv2": lambda tmp_path: load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx")),
    "unet_nearest": lambda tmp_path: _unet(tmp_path, "nearest"),
    "unet_convtranspose": lambda tmp_path: _unet(tmp_path, "convtranspose"),
}


def _samples(graph, count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{v.name: rng.standard_normal(v.shape).astype(np.float32) for v in graph.inputs} for _ in range(count)]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_value_equals_the_numpy_forward(model, tmp_path):
    graph = prepare_for_quantization(MODELS[model](tmp_path))
    runner = onnx_run.onnxruntime_forward(graph)
    assert runner is not None, "the graph should export and run on onnxruntime"
    sample = _samples(graph, 1)[0]
    seen: list[str] = []
    ours = runner(sample, visit=lambda value, array: seen.append(value.name), keep=None)
    expected = forward(graph, sample, keep=None)
    assert set(ours) == set(expected)
    assert seen == [v.name for v in graph.inputs] + [o.name for n in graph.nodes for o in n.outputs]
    for name, array in expected.items():
        assert ours[name].shape == array.shape, name
        scale = max(float(np.abs(array).max()), 1e-6)
        np.testing.assert_allclose(ours[name], array, rtol=0, atol=2e-5 * scale, err_msg=name)


def test_calibration_ranges_agree_with_the_numpy_forward(tmp_path):
    graph = prepare_for_quantization(MODELS["unet_nearest"](tmp_path))
    samples = _samples(graph, 3)
    fast = calibrate(graph, samples, progress=False, runner=float_runner(graph))
    slow = calibrate(graph, samples, progress=False, runner=partial(forward, graph))
    assert list(fast) == list(slow)
    for name in slow:
        low, high = slow[name].low, slow[name].high
        tolerance = 2e-5 * max(abs(low), abs(high), 1e-6)
        assert abs(fast[name].low - low) <= tolerance and abs(fast[name].high - high) <= tolerance, name
        assert fast[name].count == slow[name].count
        assert abs(fast[name].zeros - slow[name].zeros) <= 1e-3 * slow[name].count


def test_nan_in_the_float_model_is_still_named(tmp_path):
    from mcudeploy.errors import GraphError
    graph = prepare_for_quantization(MODELS["kws_cnn"](tmp_path))
    sample = _samples(graph, 1)[0]
    name = graph.inputs[0].name
    sample[name] = np.full_like(sample[name], 3e38)   # overflows to Inf in the first layers
    with pytest.raises(GraphError, match="NaN / Inf on calibration sample 0"):
        calibrate(graph, [sample], progress=False, runner=float_runner(graph))


def test_fallbacks_give_the_numpy_forward(tmp_path, monkeypatch):
    graph = prepare_for_quantization(MODELS["kws_cnn"](tmp_path))
    assert isinstance(float_runner(graph), onnx_run.OnnxRuntimeForward)
    monkeypatch.setattr(onnx_run, "MAX_RUN_BYTES", 16)
    assert onnx_run.onnxruntime_forward(graph) is None
    runner = float_runner(graph)
    assert isinstance(runner, partial) and runner.func is forward
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)   # an install without onnxruntime
    assert onnx_run.onnxruntime_forward(graph) is None
    monkeypatch.undo()
    node = graph.nodes[0]
    monkeypatch.setattr(node, "op", "NoSuchOp")              # an op with no ONNX writer
    assert onnx_run.onnxruntime_forward(graph) is None


def test_ranges_inside_onnxruntime_equal_the_observed_ones(tmp_path):
    """The minmax path (ReduceMin / ReduceMax in the session) against the numpy forward's
    observers, and calibrate's default for histogram=False takes it."""
    graph = prepare_for_quantization(MODELS["unet_convtranspose"](tmp_path))
    samples = _samples(graph, 3)
    ranges = onnx_run.onnxruntime_ranges(graph)
    assert ranges is not None
    fast = calibrate(graph, samples, progress=False, histogram=False)
    slow = calibrate(graph, samples, progress=False, histogram=False, runner=partial(forward, graph))
    assert list(fast) == list(slow)
    for name in slow:
        low, high = slow[name].low, slow[name].high
        tolerance = 2e-5 * max(abs(low), abs(high), 1e-6)
        assert abs(fast[name].low - low) <= tolerance and abs(fast[name].high - high) <= tolerance, name
        assert fast[name].count == slow[name].count and not fast[name].histogram


@pytest.mark.parametrize("fill", [0.0, 3e38])   # 0 / 0 = NaN only; 3e38 * 3e38 = Inf
def test_nan_or_inf_is_caught_by_the_ranges(fill):
    from mcudeploy.errors import GraphError
    from mcudeploy.ir import DType, Graph
    graph = Graph("nan_maker")
    x = graph.add_input("x", DType.FLOAT32, (1, 8))
    graph.outputs = [graph.add_node("Div" if fill == 0.0 else "Mul", [x, x], {}, name="op").outputs[0]]
    sample = {"x": np.full((1, 8), fill, np.float32)}
    sample["x"][0, 0] = 1.0    # one ordinary value: ReduceMin / ReduceMax alone may skip a NaN
    assert onnx_run.onnxruntime_ranges(graph) is not None
    with pytest.raises(GraphError, match="'op' is NaN / Inf on calibration sample 0"):
        calibrate(graph, [sample], progress=False, histogram=False)
