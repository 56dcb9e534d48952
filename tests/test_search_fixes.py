"""What-if fixes: the model rewrites (channel padding exact in float and integer arithmetic,
skip reduction smaller), input resizing (and its refusal for a fixed-size head), and a search
that fails on chip and returns verified, priced, ranked fixes."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from conftest import REPO, shared_model
from mcudeploy.driver import deploy, deployable_graph, load_graph
from mcudeploy.errors import UnsupportedError
from mcudeploy.options import DeploymentOptions
from mcudeploy.reference import run_float, run_int
from mcudeploy.search import SearchRequest, run_search
from mcudeploy.search.reshape import rebuild, spatial_input
from mcudeploy.search.rewrites import pad_channels, reduce_skips, unaligned

sys.path.insert(0, str(REPO / "tools"))
make_unet = importlib.import_module("make_unet").make_unet


@pytest.fixture(scope="module")
def odd_unet(tmp_path_factory):
    """A 32x32 U-Net whose skips are 8 channels: concats of 72, 136 and 264 channels."""
    import onnx
    path = tmp_path_factory.mktemp("unet") / "unet32_odd8.onnx"
    onnx.save(make_unet(32, odd_skip=8), path)
    return path


@pytest.fixture(scope="module")
def quantized_odd_unet(odd_unet, tmp_path_factory):
    from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
    calibration = tmp_path_factory.mktemp("calib") / "calib.npy"
    np.save(calibration, np.random.default_rng(0).random((2, 1, 32, 32), dtype=np.float32))
    return quantize_model(load_graph(odd_unet), str(calibration),
                          QuantizationConfig(progress=False, evaluation_samples=1)).graph


def test_make_unet_odd_skip_gives_72_and_136_channel_concats(odd_unet):
    graph = deployable_graph(load_graph(odd_unet))
    widths = sorted(c for _, c in unaligned(graph, 16))
    assert widths == [72, 136, 264]


def test_channel_padding_is_exact_in_float(odd_unet):
    graph = deployable_graph(load_graph(odd_unet))
    rewrite = pad_channels(graph, 16)
    assert unaligned(rewrite.graph, 16) == [] and rewrite.exact
    assert any("72 -> 80 input channels" in change for change in rewrite.changes)
    assert rewrite.macc_after > rewrite.macc_before
    x = np.random.default_rng(1).random((1, 1, 32, 32), dtype=np.float32)
    before, after = run_float(graph, {"input": x}), run_float(rewrite.graph, {"input": x})
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_channel_padding_refuses_weights_computed_at_run_time():
    """The producer to widen has runtime weights: a clear refusal, not an AttributeError."""
    from mcudeploy.ir import DType, Graph, verify
    graph = Graph("runtime_weights")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 8, 8))
    weights = graph.add_input("w", DType.FLOAT32, (6, 4, 1, 1))
    y = graph.add_node("Conv", [x, weights], {"layout": "NCHW"}, name="conv1").outputs[0]
    w2 = graph.add_constant("w2", np.ones((8, 6, 1, 1), np.float32))
    graph.outputs = [graph.add_node("Conv", [y, w2], {"layout": "NCHW"}, name="conv2").outputs[0]]
    verify(graph)
    assert [c for _, c in unaligned(graph, 16)] == [6]
    with pytest.raises(UnsupportedError, match="'w' is computed at run time"):
        pad_channels(graph, 16)


@pytest.mark.slow
def test_channel_padding_is_bit_exact_in_int8(quantized_odd_unet):
    graph = deployable_graph(quantized_odd_unet.copy())
    rewrite = pad_channels(graph, 16)
    x = np.random.default_rng(2).random((1, 1, 32, 32), dtype=np.float32)
    before, after = run_int(graph, {"input": x}), run_int(rewrite.graph, {"input": x})
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
    assert deploy(rewrite.graph, DeploymentOptions(target="stm32n6")).precision == "integer"


def test_skip_reduction_shrinks_the_arena_and_is_marked_not_exact(tmp_path):
    import onnx
    graph = deployable_graph(load_graph(shared_model("onnx/mobilenetv2_0.5_128.onnx")))
    with pytest.raises(UnsupportedError, match="no Concat"):
        reduce_skips(graph)
    onnx.save(make_unet(32), tmp_path / "unet32.onnx")
    unet = deployable_graph(load_graph(tmp_path / "unet32.onnx"))
    rewrite = reduce_skips(unet)
    assert not rewrite.exact and any("1x1 conv 32 -> 16" in change for change in rewrite.changes)
    options = DeploymentOptions(target="stm32n6")
    assert deploy(rewrite.graph, options).plan.arena_bytes < deploy(unet, options).plan.arena_bytes


def test_rebuild_resizes_a_fully_convolutional_model_and_refuses_a_fixed_head(odd_unet):
    graph = load_graph(odd_unet)
    value, h_axis, w_axis = spatial_input(graph)
    smaller = rebuild(graph, {value.name: (1, 1, 16, 16)})
    assert smaller.outputs[0].shape == (1, 1, 16, 16)
    resnet = load_graph(shared_model("mlperf_tiny/resnet8_int8.tflite"))
    with pytest.raises(UnsupportedError, match="fixed-size"):
        rebuild(resnet, {resnet.inputs[0].name: (1, 16, 16, 3)})


@pytest.mark.slow
def test_a_search_that_fails_on_chip_returns_verified_ranked_fixes(odd_unet, tmp_path):
    """The float 32x32 U-Net on an STM32N6 capped at 200 KiB per region, on chip only: nothing
    fits; the fixes raise the limit exactly, move tensors to PSRAM, shrink the input, each one
    verified by its trial, cheapest first."""
    base = DeploymentOptions(target="stm32n6", sram_limit=200 * 1024, external_activations=False)
    locked = frozenset({"sram_limit", "external_activations", "split_arena", "tiling_auto", "split_auto"})
    model = load_graph(odd_unet)
    result = run_search(model, SearchRequest(target="stm32n6", options=base, locked=locked, budget=8,
                                             log_path=tmp_path / "fixes.log"))
    assert result.best is None
    kinds = {fix.kind: fix for fix in result.fixes}
    assert {"sram_limit", "psram", "resolution"} <= set(kinds)
    limit = kinds["sram_limit"]
    assert limit.verified and limit.passes
    reference = result.trials[limit.trial].config
    options = base.with_values(**{k: v for k, v in reference.items() if k != "sram_limit"})
    assert deploy(model, options.with_values(sram_limit=limit.changes["sram_limit"])).fits
    assert not deploy(model, options.with_values(sram_limit=limit.changes["sram_limit"] - 1)).fits
    psram = kinds["psram"]
    assert psram.verified and psram.price["external_bytes"] > 0 and "external_activations = true" in psram.apply[0]
    resolution = kinds["resolution"]
    assert resolution.verified and resolution.price["pixels_percent"] < 100
    assert resolution.apply[0].startswith("--input-shape input=1,1,")
    assert [fix.rank for fix in result.fixes] == sorted(fix.rank for fix in result.fixes)
    assert "fix [" in (tmp_path / "fixes.log").read_text()


@pytest.mark.parametrize("model,step", [
    ("UNET", 8),                                           # three 2x2 max pools (the decoder's Resizes undo them)
    ("mlperf_tiny/mobilenetv1_vww_int8.tflite", 32),       # five stride-2 layers; the global pool does not count
    ("mlperf_tiny/resnet8_int8.tflite", 4),                # two stride-2 stages; the 8x8 global pool does not count
])
def test_the_resolution_step_is_the_strides_down_sampling(model, step, odd_unet):
    """The sizes the resolution fix tries are the multiples the layers' strides allow (counted
    by hand from the architectures above), not the input height over its smallest tensor."""
    from mcudeploy.search.fixes import _downsampling
    graph = load_graph(odd_unet if model == "UNET" else shared_model(model))
    value, h_axis, _ = spatial_input(graph)
    assert _downsampling(graph, value, h_axis) == step


def test_the_resolution_fix_of_a_quantized_model_says_to_quantize_the_float_model_again(quantized_odd_unet,
                                                                                          odd_unet, tmp_path):
    from mcudeploy.search.fixes import _resize_command
    value, _, _ = spatial_input(quantized_odd_unet)
    text = _resize_command(quantized_odd_unet, value, [1, 1, 16, 16], "16x16")
    assert text.startswith("mcudeploy quantize FLOAT_MODEL --input-shape input=1,1,16,16 --calib DATA -o MODEL_16x16.onnx")
    assert "the model given is quantized" in text and "--int8-io" not in text      # float I/O
    qdq = tmp_path / "qdq.onnx"                    # the exported QDQ model a user passes (precision "qdq")
    from mcudeploy.exporters.onnx_qdq import export_onnx_qdq
    export_onnx_qdq(quantized_odd_unet, qdq)
    assert _resize_command(load_graph(qdq), value, [1, 1, 16, 16], "16x16").startswith("mcudeploy quantize FLOAT_MODEL")
    float_graph = load_graph(odd_unet)
    assert _resize_command(float_graph, spatial_input(float_graph)[0], [1, 1, 16, 16], "16x16").startswith(
        "--input-shape input=1,1,16,16   (re-import")


def test_integer_io_keeps_the_layers_and_drops_the_float_edges(quantized_odd_unet):
    """search/integer_io.py: the quantized U-Net with float I/O, without its edge conversions:
    int8 in and out, the application's own quantize / dequantize (numpy) around it give the
    float model's integer outputs exactly."""
    from mcudeploy.search.integer_io import integer_io
    graph = deployable_graph(quantized_odd_unet.copy())
    rewrite = integer_io(graph)
    new = rewrite.graph
    assert [v.dtype.value for v in new.inputs] == ["int8"] and [v.dtype.value for v in new.outputs] == ["int8"]
    assert len(new.nodes) == len(graph.nodes) - 2 and rewrite.exact and len(rewrite.changes) == 2
    x = np.random.default_rng(1).random((1, 1, 1, 32, 32), dtype=np.float32)
    expected = run_int(graph, {graph.inputs[0].name: x}, batch=True)[graph.outputs[0].name]
    q_in = new.inputs[0].quant
    scale, zero = float(q_in.scale.reshape(-1)[0]), int(q_in.zero_point.reshape(-1)[0])
    q = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
    got = run_int(new, {new.inputs[0].name: q}, batch=True)[new.outputs[0].name]
    q_out = new.outputs[0].quant
    dequantized = (got.astype(np.float32) - int(q_out.zero_point.reshape(-1)[0])) * float(q_out.scale.reshape(-1)[0])
    np.testing.assert_allclose(dequantized.reshape(expected.shape), expected, rtol=0, atol=1e-6)
    assert integer_io(new) is None                  # already integer: nothing to change


def test_a_tiled_resolution_step_expected_past_the_time_is_not_started_and_a_stopped_bisection_says_so(odd_unet):
    """The tiled resolution fix's bisection stops before a step expected (the longest tiling
    trial so far) to end past --time; a bracket it stopped in is not called "the largest"."""
    from types import SimpleNamespace

    from mcudeploy.search.critical import Boundary
    from mcudeploy.search.fixes import Fixer
    fixer = Fixer.__new__(Fixer)
    trial = lambda seconds, tiles: SimpleNamespace(seconds=seconds, config={"tiling_auto": tiles})   # noqa: E731
    fixer.search = SimpleNamespace(trials=[trial(137.0, True), trial(400.0, False), trial(12.0, True)])
    assert fixer._expected_seconds({"tiling_auto": True}) == 137.0
    assert fixer._expected_seconds({"tiling_auto": False}) == 0.0
    fixer.graph = load_graph(odd_unet)
    value, h_axis, w_axis = spatial_input(fixer.graph)
    height, width = value.shape[h_axis], value.shape[w_axis]
    metrics = SimpleNamespace(macc=50, latency_us=1000.0, ram_bytes=10)
    fixer.reference = SimpleNamespace(metrics=SimpleNamespace(macc=100, latency_us=2000.0, ram_bytes=20))
    passing = SimpleNamespace(metrics=metrics, passed=True, index=5, reasons=[])
    for exact, words in ((True, "the largest that fits"), (False, "bisection stopped by --time")):
        result = Boundary(8, height, passing, SimpleNamespace(index=4), exact=exact)
        fix = fixer._resolution_fix(value, result, (height, width, h_axis, w_axis), {"tiling_auto": True}, " with tiling")
        assert words in fix.title and ("the largest that fits" in fix.title) is exact
