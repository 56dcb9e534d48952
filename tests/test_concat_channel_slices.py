"""NHWC channel Concat in place (plan/reuse.py ``channel-slice``): each input's producer writes
straight into its channel slice of the Concat's output with an out c_stride (mcu_dims.c_stride,
kernels/strided_output.py), and the Concat runs no kernel.

Two graphs built here and quantized by mcudeploy (int8 inputs / outputs): a SqueezeNet fire
module (squeeze 1x1 -> expand 1x1 || expand 3x3 -> channel concat -> conv) and a U-Net decoder
step (nearest up-sampling of a deep tensor || a 1x1-conv skip -> concat -> conv). Each is planned
with and without concat in place (the arena shrinks by a hand-checked number of bytes), and
its generated C runs on the host under ASan / UBSan and, where the cross compiler is
installed, under QEMU Cortex-M4 (DSP variants) and Cortex-M55 (Helium variants), bit-exact
with the integer reference."""
from __future__ import annotations

import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from kernel_cases import mismatches
from mcudeploy.driver import deploy, deployable_graph
from mcudeploy.importers import load_model
from mcudeploy.ir import verify
from mcudeploy.options import DeploymentOptions
from mcudeploy.plan.memory_plan import plan_memory
from mcudeploy.reference.int_executor import run_int
from mcudeploy.validate.c_runner import run_host
from test_codegen_qemu import needs_toolchain
from tiling_models import quantize_int8_io

SIZE = 16


def _builder():
    sys.path.insert(0, str(REPO / "tools"))
    from make_unet import _Builder
    return _Builder(3)


def _model(build, output: str, name: str):
    from onnx import TensorProto, helper
    graph = helper.make_graph(build.nodes, name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], build.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def fire_model():
    """conv 3x3 (3 -> 16) -> squeeze 1x1 (16 -> 8) -> expand 1x1 (8 -> 16) || expand 3x3 (8 -> 16)
    -> concat (32 channels) -> conv 3x3 (32 -> 8) -> max pool."""
    build = _builder()
    x = build.conv("input", 3, 16, 3)
    squeeze = build.conv(x, 16, 8, 1)
    joined = build.node("Concat", [build.conv(squeeze, 8, 16, 1), build.conv(squeeze, 8, 16, 3)], axis=1)
    output = build.node("MaxPool", [build.conv(joined, 32, 8, 3)], kernel_shape=[2, 2], strides=[2, 2])
    return _model(build, output, "fire")


def decoder_model():
    """conv 3x3 (3 -> 8) -> [skip: conv 1x1 (8 -> 16)] and [max pool -> conv 3x3 (8 -> 32) ->
    nearest x2] -> concat (48 channels) -> conv 3x3 (48 -> 16) -> conv 1x1 (16 -> 4)."""
    build = _builder()
    x = build.conv("input", 3, 8, 3)
    skip = build.conv(x, 8, 16, 1)
    deep = build.conv(build.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), 8, 32, 3)
    up, _ = build.upsample(deep, 32, "nearest")
    joined = build.node("Concat", [up, skip], axis=1)
    return _model(build, build.conv(build.conv(joined, 48, 16, 3), 16, 4, 1, relu=False), "decoder")


MODELS = {"fire": fire_model, "decoder": decoder_model}
# arena bytes (alignment 16, graph input and output in the arena) without / with concat in place.
# fire, in place: the 32-channel concat (8192) + the squeeze output (2048) while expand 3x3 runs,
# the concat + the next conv's output (2048) after: 10240, the live-set lower bound. decoder, in
# place: the 48-channel concat (12288) + the consumer conv's 16 channels (4096) less the 512
# bytes that conv overlaps: 15872; copying, the overlap reuse packs to 16384 (the Concat's memmove
# over its dead up-sampled input; 16400 when its copies were memcpy, kernels/overlap.py).
ARENAS = {"fire": (12432, 10240), "decoder": (16384, 15872)}


@lru_cache(maxsize=None)
def _graph(name: str):
    import onnx
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.onnx"
        onnx.save(MODELS[name](), path)
        graph = load_model(path)
    return deployable_graph(quantize_int8_io(graph, (1, 3, SIZE, SIZE), samples=1))


def graph_of(name: str):
    graph = _graph(name).copy()
    verify(graph)
    return graph


def concat_of(graph):
    return next(node for node in graph.nodes if node.op == "Concat")


def feeds_of(graph, count: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {value.name: rng.integers(-128, 128, (count, *value.shape), endpoint=False).astype(np.int8)
            for value in graph.inputs}


@pytest.mark.parametrize("name", MODELS)
def test_channel_concat_is_planned_in_place_and_the_arena_shrinks(name):
    graph = graph_of(name)
    concat = concat_of(graph)
    output = concat.outputs[0]
    assert concat.attrs["axis"] % output.rank == 3 and output.shape[1] == output.shape[2] > 1   # NHWC, strided
    dense = plan_memory(graph, concat_in_place=False)
    strided = plan_memory(graph)
    assert concat.name in strided.elided_nodes and concat.name not in dense.elided_nodes
    offset = 0
    for value in concat.inputs:
        assert strided.channel_strides[value.name] == output.shape[3]
        assert strided.tensors[value.name].offset == strided.tensors[output.name].offset + offset
        assert strided.tensors[value.name].alias_of == output.name
        offset += value.shape[3]
    assert not dense.channel_strides
    assert (dense.arena_bytes, strided.arena_bytes) == ARENAS[name]


@pytest.mark.parametrize("in_place", [True, False])
def test_the_memory_transformations_plan_with_the_deployments_own_options(in_place):
    """The planner automatic tiling tries candidates with and the deployment's final plan take
    the same options from one mapping (plan_arguments): with concat_in_place = false neither
    elides the Concat (the tiling's planner used to ignore it)."""
    from mcudeploy.plan.memory_transform import _planner
    graph = graph_of("fire")
    options = DeploymentOptions(concat_in_place=in_place)
    tried = _planner(None, options)(graph)
    final = deploy(graph, options).plan
    name = concat_of(graph).name
    assert (name in tried.elided_nodes) == (name in final.elided_nodes) == in_place
    assert tried.arena_bytes == final.arena_bytes


@pytest.mark.parametrize("name", MODELS)
def test_generated_code_with_strided_producers_is_bit_exact_on_the_host(name):
    graph = graph_of(name)
    feeds = feeds_of(graph)
    reference = run_int(graph, feeds, batch=True)
    for in_place in (True, False):
        deployment = deploy(graph, DeploymentOptions(concat_in_place=in_place))
        assert (concat_of(graph).name in deployment.plan.elided_nodes) == in_place
        result = run_host(deployment, feeds, sanitize=True)
        for value in graph.outputs:
            assert np.array_equal(result.outputs[value.name], reference[value.name]), (name, in_place)
        assert len(np.unique(reference[graph.outputs[0].name])) > 4


def test_generated_code_writes_the_channel_stride_only_for_the_producers():
    from mcudeploy.codegen import ProjectOptions, generate_files
    graph = graph_of("fire")
    deployment = deploy(graph)
    network = generate_files(deployment, ProjectOptions())["network.c"]
    strided = [line for line in network.splitlines()
               if "_out_dims = {" in line and not line.endswith(".c_stride = 0};")]
    assert len(strided) == 2 and all(line.endswith(".w = 16, .c = 16, .c_stride = 32};") for line in strided), strided
    assert "mcu_concat_s8" not in network


@pytest.mark.parametrize("target, family", [("stm32h743", "dsp"), ("stm32n6", "mve")])
@pytest.mark.parametrize("name", MODELS)
def test_optimised_variants_write_their_slices_on_the_host(name, target, family):
    graph = graph_of(name)
    wrong, deployment = mismatches(graph, feeds_of(graph, 2), target, "host")
    assert not wrong, wrong
    concat = concat_of(graph)
    assert concat.name in deployment.plan.elided_nodes
    producers = [value.producer.name for value in concat.inputs]
    assert any(deployment.kernels.choices[p].variant.startswith(family) for p in producers)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("target, on", [("stm32h743", "qemu-m4"), ("stm32n6", "qemu-m55")])
@pytest.mark.parametrize("name", MODELS)
def test_channel_slices_bit_exact_under_qemu(name, target, on):
    graph = graph_of(name)
    wrong, deployment = mismatches(graph, feeds_of(graph, 2), target, on)
    assert not wrong, wrong
    assert concat_of(graph).name in deployment.plan.elided_nodes


def test_a_concat_input_with_another_reader_is_refused_with_the_reason():
    graph = graph_of("fire")
    concat = concat_of(graph)
    first = concat.inputs[0]
    graph.add_node("MaxPool", [first], {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (2, 2)}, name="reader")
    graph.outputs = [*graph.outputs, graph.nodes[-1].outputs[0]]
    graph.outputs[-1].quant = first.quant
    plan = plan_memory(graph)
    assert concat.name not in plan.elided_nodes and not plan.channel_strides
    reasons = [reason for node, reason in plan.reuse_refusals if node == concat.name]
    assert any("also read by 'reader'" in reason and "strided" in reason for reason in reasons), reasons


def test_a_producer_whose_kernel_ignores_the_stride_is_refused():
    from mcudeploy.kernels import choose_kernels
    from mcudeploy.kernels.strided_output import STRIDED_OUTPUT
    graph = graph_of("fire")
    concat = concat_of(graph)
    saved = STRIDED_OUTPUT["reference"].pop("Conv")
    try:
        plan = plan_memory(graph, kernels=choose_kernels(graph, None, "reference"))
    finally:
        STRIDED_OUTPUT["reference"]["Conv"] = saved
    assert concat.name not in plan.elided_nodes
    reasons = [reason for node, reason in plan.reuse_refusals if node == concat.name]
    assert any("does not write a strided output" in reason for reason in reasons), reasons
