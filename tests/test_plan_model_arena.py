"""Memory plans run for real: every node's C kernel (runtime/src, loaded via ctypes) reads and
writes ONE byte arena at the planned offsets - in-place, overlapping and aliased exactly as
planned - and the graph outputs must equal ``run_int`` (the bit-exact Python reference)
byte for byte.

A float check with the float executor would prove nothing about aliasing: numpy kernels
return fresh arrays, so buffers are never really shared there. The C kernels are the code
the generated program runs, so their access order is what the overlap proofs are about.
"""
from __future__ import annotations

import dataclasses
import logging
import shutil
import sys

import numpy as np
import pytest

from conftest import REPO, shared_model
from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.plan.memory_plan import MemoryPlan, plan_memory, plan_problems
from mcudeploy.reference.int_executor import run_int
from mcudeploy.reference.int_kernels import prepare_node

sys.path.insert(0, str(REPO / "runtime" / "tests"))
from c_runners import RUNNERS  # noqa: E402
from mcu_ctypes import Runtime, build_library  # noqa: E402


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Runtime:
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    return Runtime(build_library(tmp_path_factory.mktemp("runtime") / "libmcu_runtime.so"))


def run_in_arena(runtime: Runtime, graph: Graph, plan: MemoryPlan, feeds: dict) -> dict:
    """Run ``graph`` in ``plan.order`` with every tensor a view of one arena (garbage-filled)."""
    arena = np.random.default_rng(99).integers(0, 256, plan.arena_bytes + 16, dtype=np.uint8)
    arena[plan.arena_bytes:] = 0xA5     # guard bytes: must stay untouched

    owned = {v.name: np.zeros(v.shape, v.dtype.numpy) for v in [*graph.inputs, *graph.outputs]
             if v.name not in plan.tensors}    # application-owned buffers (io_in_arena=False)

    def view(value) -> np.ndarray:
        if value.name in owned:
            return owned[value.name]
        placement = plan.tensors[value.name]
        raw = arena[placement.offset:placement.offset + value.nbytes]
        return raw.view(value.dtype.numpy).reshape(value.shape)

    for value in graph.inputs:
        view(value)[...] = feeds[value.name]
    for name in plan.order:
        if name in plan.elided_nodes:
            continue
        node = graph.node(name)
        inputs = [None if v is None else v.const if v.is_constant else view(v) for v in node.inputs]
        RUNNERS[node.op](runtime, node, prepare_node(node), inputs, view(node.outputs[0]))
    assert np.all(arena[plan.arena_bytes:] == 0xA5), "a kernel wrote past the arena"
    return {value.name: view(value).copy() for value in graph.outputs}


def random_feeds(graph: Graph, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {v.name: rng.integers(-128, 128, v.shape).astype(v.dtype.numpy) for v in graph.inputs}


def per_tensor(scale: float, zero_point: int) -> QuantParams:
    return QuantParams(np.array([scale], np.float32), np.array([zero_point]))


def add_conv(graph: Graph, rng, x, out_channels: int, kernel: int, stride: int, pad: int, name: str,
             depthwise: bool = False, out_quant: QuantParams | None = None):
    channels = x.shape[3]
    group = channels if depthwise else 1
    weights = rng.integers(-127, 128, (out_channels, kernel, kernel, channels // group)).astype(np.int8)
    scales = rng.uniform(0.005, 0.02, out_channels).astype(np.float32)
    w = graph.add_constant(name + "_w", weights, quant=QuantParams(scales, np.zeros(out_channels), 0))
    b = graph.add_constant(name + "_b", rng.integers(-500, 500, out_channels).astype(np.int32))
    node = graph.add_node("Conv", [x, w, b], {"layout": "NHWC", "strides": (stride, stride),
                                              "pads": (pad,) * 4, "group": group}, name=name)
    node.outputs[0].quant = out_quant or per_tensor(0.05 * kernel, int(rng.integers(-20, 20)))
    return node.outputs[0]


def small_graph() -> Graph:
    """Stride-2 conv, depthwise, in-place Add, Concat along H (contiguous), Reshape."""
    rng = np.random.default_rng(3)
    graph = Graph("small")
    x = graph.add_input("x", DType.INT8, (1, 16, 16, 16), quant=per_tensor(0.02, 3), layout="NHWC")
    c1 = add_conv(graph, rng, x, 8, 3, 2, 1, "conv_s2")
    c2 = add_conv(graph, rng, c1, 8, 3, 1, 1, "depthwise", depthwise=True)
    add = graph.add_node("Add", [c2, c1], name="add").outputs[0]
    add.quant = per_tensor(0.4, -5)
    branch = add_conv(graph, rng, add, 8, 1, 1, 0, "pointwise", out_quant=add.quant)
    concat = graph.add_node("Concat", [add, branch], {"axis": 1}, name="concat").outputs[0]
    concat.quant = add.quant
    flat = graph.add_node("Reshape", [concat], {"shape": (1, 1024)}, name="flatten").outputs[0]
    flat.quant = add.quant
    graph.outputs = [flat]
    verify(graph)
    return graph


@pytest.mark.parametrize("options", [dict(reuse=False), dict(concat_in_place=False),
                                     dict(concat_in_place=True), dict(io_in_arena=False, concat_in_place=True)],
                         ids=["no-reuse", "overlap", "overlap+concat", "app-owned-io"])
def test_small_graph_in_one_arena_matches_reference(runtime, options):
    graph = small_graph()
    io_in_arena = options.pop("io_in_arena", True)
    plan = plan_memory(graph, alignment=4, io_in_arena=io_in_arena, time_limit=1.0, **options)
    assert plan_problems(plan) == []
    assert ("x" in plan.tensors) == io_in_arena
    feeds = random_feeds(graph, 1)
    expected = run_int(graph, feeds)
    actual = run_in_arena(runtime, graph, plan, feeds)
    for name, array in expected.items():
        assert actual[name].tobytes() == array.tobytes(), name
    if options.get("reuse", True) and io_in_arena:
        assert plan.pairs, "the plan should overlap at least one op with its input"
        assert plan.arena_bytes < plan.no_reuse_bound_bytes
    if options.get("concat_in_place"):
        assert plan.elided_nodes == ["concat"]
        assert plan.tensors["add"].alias_of == "concat"
        assert plan.tensors["pointwise"].offset == plan.tensors["concat"].offset + 512


def test_overlap_plan_is_wrong_without_its_distance(runtime):
    """The check can fail: forcing the stride-2 conv's output fully in place (distance 0
    instead of the proved 8 bytes) makes the C kernel overwrite input channels it still reads."""
    graph = small_graph()
    plan = plan_memory(graph, alignment=4, time_limit=1.0, concat_in_place=False)
    pair = next(p for p in plan.pairs if p.node == "conv_s2")
    assert pair.distance == 8 and plan.tensors["conv_s2"].offset <= plan.tensors["x"].offset - 8
    plan.tensors["conv_s2"] = dataclasses.replace(plan.tensors["conv_s2"], offset=plan.tensors["x"].offset)
    assert plan_problems(plan), "validator must reject the unproved overlap"
    feeds = random_feeds(graph, 2)
    actual = run_in_arena(runtime, graph, plan, feeds)
    expected = run_int(graph, feeds)
    assert any(actual[n].tobytes() != expected[n].tobytes() for n in expected)


def channel_concat_graph() -> Graph:
    """x -> a = conv1x1 -> b = conv1x1 -> Concat([b, a], channels): the peak is the Concat,
    whose output overlaps input b (proved from concat.c's block-by-block copies)."""
    rng = np.random.default_rng(5)
    graph = Graph("channel_concat")
    x = graph.add_input("x", DType.INT8, (1, 8, 8, 16), quant=per_tensor(0.02, 1), layout="NHWC")
    quant = per_tensor(0.3, 2)
    a = add_conv(graph, rng, x, 16, 1, 1, 0, "a", out_quant=quant)
    b = add_conv(graph, rng, a, 16, 1, 1, 0, "b", out_quant=quant)
    out = graph.add_node("Concat", [b, a], {"axis": 3}, name="concat").outputs[0]
    out.quant = quant
    graph.outputs = [out]
    verify(graph)
    return graph


def test_channel_concat_overlapping_its_input_matches_reference(runtime):
    graph = channel_concat_graph()
    plan = plan_memory(graph, alignment=16, time_limit=1.0)
    pair = next(p for p in plan.pairs if p.node == "concat")
    assert (pair.input, pair.distance) == ("b", 1008)       # (B - 1)(O - L) + prefix = 63*16 (memmove)
    assert plan.tensors["concat"].offset == plan.tensors["b"].offset - 1008
    assert plan.arena_bytes == 3072 < plan.no_reuse_bound_bytes == 4096
    feeds = random_feeds(graph, 3)
    expected = run_int(graph, feeds)
    assert run_in_arena(runtime, graph, plan, feeds)["concat"].tobytes() == expected["concat"].tobytes()


ARENA_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
                "tflite_micro/micro_speech_int8.tflite", "mlperf_tiny/streaming_wakeword_int8.tflite",
                "tflite_micro/person_detect_int8.tflite", "mlperf_tiny/mobilenetv1_vww_int8.tflite"]


@pytest.mark.parametrize("model", ARENA_MODELS)
def test_real_model_in_one_arena_matches_reference(runtime, model, caplog):
    caplog.set_level(logging.ERROR)
    graph = load_model(shared_model(model))
    plan = plan_memory(graph, time_limit=1.0)
    assert plan.pairs and plan.arena_bytes < plan.no_reuse_bound_bytes
    feeds = random_feeds(graph, 0)
    expected = run_int(graph, feeds)
    actual = run_in_arena(runtime, graph, plan, feeds)
    for name, array in expected.items():
        assert actual[name].tobytes() == array.tobytes(), name
