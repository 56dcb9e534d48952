"""Input-channel split of a Conv (passes/split_input_channels.py, ir/opdefs/accumulate.py,
runtime/src/conv_accumulate.c): the rewrite's structure, bit-exactness of the integer
reference against the UNSPLIT graph (2, 3 and 4 groups, two geometries), the plan's int32
accumulator written in place, generated C on the host (ASan + UBSan) and on QEMU Cortex-M4
against the unsplit reference, the estimate's k + 1 passes, every bad input as a UsageError
naming the node, and the option's round trip (TOML -> options -> TOML, JSON, --space)."""
from __future__ import annotations

import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy, deployable_graph
from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.options import DeploymentOptions, parse_options
from mcudeploy.passes.base import run_passes
from mcudeploy.passes.split_input_channels import SplitInputChannels
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate import qemu
from mcudeploy.validate.generated_code import run_generated
from tiling_models import assert_same_outputs, quantize_int8_io, random_feeds

GEOMETRIES = {"3x3 pad 1": {"pads": [1, 1, 1, 1]}, "3x3 stride 2": {"strides": [2, 2], "pads": [0, 0, 1, 1]}}


def conv_model(attributes: dict):
    """ONNX x [1, 64, 16, 16] -> Conv 3x3 (64 -> 32, bias) -> Relu (float)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(1)
    weights = numpy_helper.from_array((rng.standard_normal((32, 64, 3, 3)) * 0.1).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", **attributes),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "conv64", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weights, bias])
    return onnx, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@lru_cache(maxsize=2)
def _int8_conv(geometry: str) -> Graph:
    onnx, model = conv_model(GEOMETRIES[geometry])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conv.onnx"
        onnx.save(model, path)
        return deployable_graph(quantize_int8_io(load_model(path), (1, 64, 16, 16)))


def int8_conv(geometry: str = "3x3 pad 1") -> Graph:
    """The int8 graph (NCHW I/O transposes around one NHWC Conv with its Relu fused)."""
    return _int8_conv(geometry).copy()


def split(graph: Graph, groups: int) -> Graph:
    result = graph.copy()
    run_passes(result, [SplitInputChannels({"conv": groups})])
    verify(result)
    return result


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("groups", [2, 3, 4])
def test_split_is_bit_exact_with_the_unsplit_conv(groups, geometry):
    graph = int8_conv(geometry)
    conv = graph.node("conv")
    result = split(graph, groups)
    pieces = [n for n in result.nodes if n.op == "ConvAccumulate"]
    (requantize,) = [n for n in result.nodes if n.op == "RequantizeAccumulator"]
    assert [n.attrs["channel_begin"] for n in pieces] == [round(64 * g / groups) for g in range(groups)]
    assert sum(n.inputs[1].shape[3] for n in pieces) == 64 and not any(n.op in ("Conv", "Slice") for n in result.nodes)
    assert all(n.inputs[0] is pieces[0].inputs[0] for n in pieces)              # X read in place, no copy
    assert pieces[0].inputs[2].name == conv.inputs[2].name                       # the bias, added once
    assert all(n.inputs[2] is previous.outputs[0] for previous, n in zip(pieces, pieces[1:]))
    accumulator = pieces[-1].outputs[0]
    assert accumulator.dtype == DType.INT32 and accumulator.shape == conv.outputs[0].shape
    assert requantize.inputs[0] is accumulator and requantize.attrs["activation_min"] == 0.0   # the fused Relu
    assert requantize.outputs[0].name == conv.outputs[0].name
    feeds = random_feeds(graph, 3)
    assert_same_outputs(graph, result, feeds)
    assert len(np.unique(run_int(graph, feeds, batch=True)[graph.outputs[0].name])) > 16   # not saturated


def split_deployment(groups: int, **options) -> tuple[Graph, object]:
    graph = int8_conv()
    return graph, deploy(graph.copy(), DeploymentOptions(**options).with_values(input_channel_splits={"conv": groups}))


def test_plan_holds_one_int32_accumulator_written_in_place():
    graph, deployment = split_deployment(4)
    tensors = deployment.plan.to_json()["tensors"]
    accumulators = [tensors[f"conv@in{g}"] for g in range(4)]
    assert all(t["size"] == 4 * 16 * 16 * 32 for t in accumulators)            # int32 [1, 16, 16, 32]
    assert len({t["offset"] for t in accumulators}) == 1                       # one buffer, in place
    assert [t["alias_of"] for t in accumulators[1:]] == ["conv@in0", "conv@in1", "conv@in2"]
    assert deployment.memory_transform.to_json()["input_channel_splits"] == {"conv": 4}
    assert check_deployment(deployment) == []
    # the accumulator is the price: the peak is X (int8, 16 KiB) + the int32 accumulator (32 KiB),
    # above the unsplit peak (32 KiB: the input transposes')
    assert deployment.plan.arena_bytes == 16 * 16 * 64 + 4 * 16 * 16 * 32 > deploy(graph.copy()).plan.arena_bytes


HAVE_ARM = all(shutil.which(tool) for tool in qemu.TOOLS)


@pytest.mark.parametrize("groups,on", [
    (2, "host"), (4, "host"),
    pytest.param(4, "qemu-m4", marks=pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi-gcc / qemu-system-arm "
                                                        "missing: tools/install_toolchain.sh")),
])
def test_generated_c_is_bit_exact_with_the_unsplit_reference(groups, on):
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("host gcc / make not installed")
    graph, deployment = split_deployment(groups, target="stm32f407" if on != "host" else None)
    feeds = random_feeds(graph, 2, seed=groups)
    result = run_generated(deployment, feeds, on, sanitize=on == "host")
    expected = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        np.testing.assert_array_equal(result.outputs[value.name], expected[value.name], err_msg=value.name)


def test_estimate_counts_the_partial_passes_and_the_requantize_pass():
    from mcudeploy.estimate import estimate
    _, deployment = split_deployment(4, target="stm32f407")
    layers = {layer.node: layer for layer in estimate(deployment).layers}
    pieces = [layers[f"conv@in{g}"] for g in range(4)]
    assert all(p.kernel == "conv_accumulate" and p.known and p.cycles > 0 for p in pieces)
    assert any("not measured: counted with the conv2d fit" in note for note in pieces[0].notes)
    requantize = layers["conv@requantize"]
    assert requantize.kernel == "requantize_accumulator" and requantize.known and 0 < requantize.cycles < pieces[0].cycles


def quant(scale, zero_point=0, axis=None) -> QuantParams:
    return QuantParams(np.asarray(scale, np.float32), np.asarray(zero_point), axis)


def int_graph(dtype: DType = DType.INT8, depthwise: bool = False) -> Graph:
    """x [1, 8, 8, 4] -> Conv 3x3 (or depthwise) -> y, quantized by hand."""
    rng = np.random.default_rng(0)
    graph = Graph("tiny")
    x = graph.add_input("x", dtype, (1, 8, 8, 4), quant=quant([0.1]), layout="NHWC")
    shape = (4, 3, 3, 1) if depthwise else (6, 3, 3, 4)
    w = graph.add_constant("w", rng.integers(-127, 128, shape).astype(np.int8),
                           quant=quant(np.full(shape[0], 0.01), np.zeros(shape[0]), 0))
    attrs = {"layout": "NHWC", "pads": (1, 1, 1, 1), "group": 4 if depthwise else 1}
    y = graph.add_node("Conv", [x, w], attrs, name="c").outputs[0]
    y.quant = quant([0.5])
    graph.add_node("Reshape", [y], {"shape": (1, 8 * 8 * shape[0])}, name="flat")
    graph.outputs = [graph.nodes[-1].outputs[0]]
    verify(graph)
    return graph


@pytest.mark.parametrize("graph,node,groups,message", [
    (int_graph(), "conv9", 2, r"input-channel split: no node 'conv9'"),
    (int_graph(), "flat", 2, r"node 'flat' \(Reshape\): only an NHWC Conv"),
    (int_graph(depthwise=True), "c", 2, r"node 'c' \(Conv\): a depthwise Conv .* split its output channels instead "
                                        r"\(\[tiling\] channel_splits = \{c = 2\}\)"),
    (int_graph(), "c", 5, r"node 'c' \(Conv\): 5 groups for 4 input channels; use 2 to 4"),
    (int_graph(), "c", 1, r"1 groups for 4 input channels; use 2 to 4"),
    (int_graph(DType.INT16), "c", 2, r"16x8 Conv .* accumulates in int64"),
], ids=["unknown", "not-a-conv", "depthwise", "too-many", "one", "16x8"])
def test_bad_input_channel_splits_name_the_node_and_what_is_allowed(graph, node, groups, message):
    with pytest.raises(UsageError, match=message):
        run_passes(graph.copy(), [SplitInputChannels({node: groups})])


def test_a_conv_in_both_splits_is_refused():
    options = DeploymentOptions().with_values(channel_splits={"c": 2}, input_channel_splits={"c": 2})
    with pytest.raises(UsageError, match=r"'c' in both channel_splits and input_channel_splits"):
        deploy(int_graph(), options)
    with pytest.raises(UsageError, match=r"input_channel_splits: every count must be at least 2"):
        parse_options({"tiling": {"input_channel_splits": {"c": 1}}}, "bad.toml")


def test_option_round_trip_toml_json_and_search_space(tmp_path):
    from mcudeploy.options import load_options
    from mcudeploy.search.space import SpaceContext, build_space, describe_value, load_space_file, options_for
    from mcudeploy.targets import load_target
    config = tmp_path / "deploy.toml"
    config.write_text('[tiling]\ninput_channel_splits = {conv = 4, "conv 2" = 2}\n', encoding="utf-8")
    options = load_options(config)
    assert options.input_channel_splits == (("conv", 4), ("conv 2", 2))
    printed = options.to_toml()
    assert '[tiling]\ninput_channel_splits = {conv = 4, "conv 2" = 2}' in printed
    again = tmp_path / "again.toml"
    again.write_text(printed, encoding="utf-8")
    assert load_options(again) == options
    assert options.to_dict()["input_channel_splits"] == {"conv": 4, "conv 2": 2}
    space_file = tmp_path / "space.toml"
    space_file.write_text("[space]\ninput_channel_splits = [{}, {conv = 2}, {conv = 4}]\n", encoding="utf-8")
    base = DeploymentOptions(target="stm32f407")
    space = build_space(SpaceContext(load_target("stm32f407"), base), overrides=load_space_file(space_file))
    assert space.values["input_channel_splits"] == ((), (("conv", 2),), (("conv", 4),))
    assert "input_channel_splits" in space.free
    assert build_space(SpaceContext(load_target("stm32f407"), base)).values["input_channel_splits"] == ((),)
    assert describe_value((("conv", 4),)) == "{conv = 4}"
    assert options_for(base, {"input_channel_splits": (("conv", 4),)}).input_channel_splits == (("conv", 4),)


def test_float_meaning_is_the_conv_on_real_numbers():
    """The ops' float reference: pieces built by hand on a float graph sum to the float Conv."""
    from mcudeploy.reference import run_float
    rng = np.random.default_rng(2)
    graph = Graph("float")
    x = graph.add_input("x", DType.FLOAT32, (1, 9, 7, 6), layout="NHWC")
    weights = rng.standard_normal((5, 3, 3, 6)).astype(np.float32)
    bias = graph.add_constant("b", rng.standard_normal(5).astype(np.float32))
    attrs = {"strides": (2, 1), "pads": (1, 0, 1, 2), "dilations": (1, 2)}
    conv = graph.add_node("Conv", [x, graph.add_constant("w", weights), bias],
                          {"layout": "NHWC", "activation_min": 0.0, **attrs}, name="conv").outputs[0]
    accumulator = bias
    for begin, end in ((0, 2), (2, 6)):
        piece = graph.add_constant(f"w{begin}", np.ascontiguousarray(weights[..., begin:end]))
        accumulator = graph.add_node("ConvAccumulate", [x, piece, accumulator], {**attrs, "channel_begin": begin},
                                     name=f"in{begin}").outputs[0]
    split_output = graph.add_node("RequantizeAccumulator", [accumulator], {"activation_min": 0.0},
                                  name="requantize").outputs[0]
    graph.outputs = [conv, split_output]
    verify(graph)
    assert accumulator.dtype == DType.FLOAT32 and split_output.dtype == DType.FLOAT32
    outputs = run_float(graph, {"x": rng.standard_normal((1, 9, 7, 6)).astype(np.float32)})
    np.testing.assert_allclose(outputs[split_output.name], outputs[conv.name], rtol=1e-5, atol=1e-5)
    assert (outputs[conv.name] == 0).any() and (outputs[conv.name] > 0).any()     # the clamp mattered


def test_shared_resnet8_split_in_two_layers_is_bit_exact_in_c_on_the_host():
    """Two layers of a real int8 model (a 32 -> 64 stride-2 conv in 2 groups, a 64 -> 64 conv in 4)."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("host gcc / make not installed")
    from conftest import shared_model
    from tiling_models import shared_int8
    graph = shared_int8("mlperf_tiny/resnet8_int8.tflite")
    splits = {"model/activation_5/Relu": 2, "model/batch_normalization_6/FusedBatchNormV3": 4}
    deployment = deploy(shared_model("mlperf_tiny/resnet8_int8.tflite"),
                        DeploymentOptions().with_values(input_channel_splits=splits))
    assert sum(n.op == "ConvAccumulate" for n in deployment.graph.nodes) == 6
    feeds = random_feeds(graph, 3, seed=8)
    result = run_generated(deployment, feeds, "host", sanitize=True)
    expected = run_int(graph, feeds, batch=True)
    for value in graph.outputs:
        np.testing.assert_array_equal(result.outputs[value.name], expected[value.name], err_msg=value.name)


# -- the C kernels through ctypes (runtime/tests/c_runners.py reads the same kernel table) -------------
from test_runtime_c import assert_nodes_match, runtime  # noqa: E402,F401  (the built library, a fixture)


def test_c_kernels_match_the_integer_reference_node_by_node(runtime):  # noqa: F811
    graph = int_graph()
    run_passes(graph, [SplitInputChannels({"c": 2})])
    feeds = {"x": np.random.default_rng(5).integers(-128, 128, (1, 8, 8, 4)).astype(np.int8)}
    assert assert_nodes_match(runtime, graph, feeds) == 4              # 2 accumulates, requantize, reshape


def accumulate_node(accumulator: np.ndarray | None):
    """One ConvAccumulate over channels [1, 3) of x [1, 4, 4, 4], W all 127, A a graph input."""
    graph = Graph("accumulate")
    x = graph.add_input("x", DType.INT8, (1, 4, 4, 4), quant=quant([0.1], 0), layout="NHWC")
    w = graph.add_constant("w", np.full((3, 3, 3, 2), 127, np.int8), quant=quant(np.full(3, 0.01), np.zeros(3), 0))
    a = graph.add_input("a", DType.INT32, (1, 4, 4, 3), layout="NHWC") if accumulator is not None else None
    node = graph.add_node("ConvAccumulate", [x, w, a], {"pads": (1, 1, 1, 1), "channel_begin": 1}, name="acc")
    graph.outputs = list(node.outputs)
    verify(graph)
    return graph, node


def test_c_accumulate_wraps_like_int32_and_runs_in_place(runtime):  # noqa: F811
    from c_runners import run_node
    from mcu_ctypes import AccumulateQuant, ConvAccumulateParams, dims

    from mcudeploy.reference.int_kernels import prepare_node
    rng = np.random.default_rng(7)
    x = np.full((1, 4, 4, 4), 127, np.int8)
    x[..., 0] = -128                                                   # channel 0 is outside the slice
    accumulator = rng.choice([2**31 - 1, 2**31 - 9000, -(2**31), -(2**31) + 5], (1, 4, 4, 3)).astype(np.int32)
    graph, node = accumulate_node(accumulator)
    expected = run_int(graph, {"x": x, "a": accumulator})[node.outputs[0].name]
    dot = np.zeros((1, 4, 4, 3), np.int64)
    padded = np.pad(x[..., 1:3].astype(np.int64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    for i in range(3):
        for j in range(3):
            dot += (padded[:, i:i + 4, j:j + 4].sum(axis=3) * 127)[..., None]
    wrapped = ((accumulator.astype(np.int64) + dot + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(expected, wrapped)
    assert (wrapped.astype(np.int64) != accumulator.astype(np.int64) + dot).any()     # it did wrap
    np.testing.assert_array_equal(run_node(runtime, node, prepare_node(node), [x, node.inputs[1].const, accumulator]),
                                  wrapped)
    in_place = accumulator.copy()
    geometry = dict(stride_h=1, stride_w=1, pad_top=1, pad_left=1, dilation_h=1, dilation_w=1)
    params, offset = ConvAccumulateParams(**geometry, channel_begin=1), AccumulateQuant(input_offset=0)
    w = node.inputs[1].const
    runtime.call("mcu_conv_accumulate_s8_s32", None, params, offset, dims(x.shape), x, dims(w.shape), w, None,
                 in_place, dims(in_place.shape), in_place)
    np.testing.assert_array_equal(in_place, wrapped)
    outside = ConvAccumulateParams(**geometry, channel_begin=3)                    # channels [3, 5) of 4
    assert runtime.status("mcu_conv_accumulate_s8_s32", None, outside, offset, dims(x.shape), x, dims(w.shape),
                          w, None, in_place, dims(in_place.shape), in_place) == 1
