"""Model-level memory planning: liveness, schedule, reuse proofs, plan validity, ledger, CLI.

Recipe: tiny graphs built in code, lifetimes / peaks / distances computed by hand or by an
independent brute force (every topological order), plans checked by the validator.
Real execution with shared buffers is in test_plan_model_arena.py; TFLM interop in
test_plan_model_tflm.py.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import re

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main as cli_main
from mcudeploy.driver import deploy
from mcudeploy.errors import GraphError, UsageError
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.kernels.overlap import overlap_distance
from mcudeploy.options import DeploymentOptions
from mcudeploy.passes.fold_pads import fold_pads
from mcudeploy.plan.bounds import live_set_bound
from mcudeploy.plan.liveness import tensor_lives, to_buffers
from mcudeploy.plan.memory_plan import plan_memory, plan_problems
from mcudeploy.plan.schedule import schedule
from mcudeploy.reference.float_executor import run_float


def chain_graph() -> Graph:
    """x -> a = Sigmoid(x) -> b = Tanh(a) -> c = Add(b, a)   (float, 1x4x4x2 = 128 bytes each)."""
    graph = Graph("chain")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 4, 2))
    a = graph.add_node("Sigmoid", [x], name="a").outputs[0]
    b = graph.add_node("Tanh", [a], name="b").outputs[0]
    c = graph.add_node("Add", [b, a], name="c").outputs[0]
    graph.outputs = [c]
    verify(graph)
    return graph


def test_liveness_matches_hand_computed_lifetimes():
    graph = chain_graph()
    lives = {life.name: life for life in tensor_lives(graph, scratch_bytes=lambda n: 200 if n.op == "Tanh" else 0)}
    assert {n: (life.size, life.first_step, life.last_step) for n, life in lives.items()} == {
        "x": (128, 0, 0), "a": (128, 0, 2), "b": (128, 1, 2), "c": (128, 2, 2), "b:scratch": (200, 1, 1)}
    owned = {life.name for life in tensor_lives(graph, io_in_arena=False)}
    assert owned == {"a", "b"}
    assert live_set_bound(to_buffers(list(lives.values()), 16)).bytes == 128 * 2 + 208   # step 1: a, b and the scratch (200 -> 208 aligned)


def test_order_must_be_topological():
    with pytest.raises(GraphError, match="before"):
        tensor_lives(chain_graph(), ["b", "a", "c"])


def branching_graph() -> Graph:
    """Two branches, each expanding 8 -> 64 channels then reducing to 8; the file order
    runs both expansions first (peak: both big tensors alive)."""
    rng = np.random.default_rng(0)
    graph = Graph("branches")
    x = graph.add_input("x", DType.FLOAT32, (1, 8, 4, 4))

    def conv(value, out_channels, name):
        w = graph.add_constant(name + "_w", rng.standard_normal((out_channels, value.shape[1], 1, 1)).astype(np.float32))
        return graph.add_node("Conv", [value, w], {"layout": "NCHW"}, name=name).outputs[0]

    big = [conv(x, 64, f"expand{i}") for i in range(2)]
    small = [conv(big[i], 8, f"reduce{i}") for i in range(2)]
    graph.outputs = [graph.add_node("Concat", small, {"axis": 1}, name="concat").outputs[0]]
    verify(graph)
    return graph


def brute_force_peak(graph: Graph, alignment: int) -> int:
    names = [n.name for n in graph.nodes]
    best = None
    for order in itertools.permutations(names):
        try:
            lives = tensor_lives(graph, list(order))
        except GraphError:
            continue
        peak = live_set_bound(to_buffers(lives, alignment)).bytes
        best = peak if best is None else min(best, peak)
    return best


def test_memory_aware_schedule_is_optimal_on_branches():
    graph = branching_graph()
    result = schedule(graph, alignment=16)
    assert result.exact
    assert result.peak == brute_force_peak(graph, 16)
    assert result.peak < result.file_order_peak
    assert result.order.index("reduce0") < result.order.index("expand1") or \
        result.order.index("reduce1") < result.order.index("expand0")


def test_plan_is_valid_aligned_and_validator_catches_overlap():
    plan = plan_memory(branching_graph(), alignment=32, time_limit=1.0)
    assert plan_problems(plan) == []
    assert all(p.offset % 32 == 0 for p in plan.tensors.values())
    assert plan.arena_bytes >= max(p.offset + p.size for p in plan.tensors.values())
    assert plan.no_reuse_bound_bytes <= plan.file_order_bound_bytes
    document = plan.to_json()
    assert document["arena_bytes"] == plan.arena_bytes and "no_reuse_bound_bytes" in document
    broken = dict(plan.tensors)
    broken["expand0"] = dataclasses.replace(broken["expand0"], offset=broken["x"].offset)
    assert plan_problems(dataclasses.replace(plan, tensors=broken))


@pytest.mark.parametrize("alignment", [0, 3, 24])
def test_bad_alignment_is_a_usage_error(alignment):
    with pytest.raises(UsageError, match="power of two"):
        plan_memory(chain_graph(), alignment=alignment)


def test_elementwise_in_place_and_view_alias():
    graph = chain_graph()
    flat = graph.add_node("Reshape", [graph.outputs[0]], {"shape": (1, 32)}, name="flat").outputs[0]
    graph.outputs = [flat]
    plan = plan_memory(graph, alignment=16, time_limit=1.0)
    assert plan.tensors["flat"].offset == plan.tensors["c"].offset and plan.tensors["flat"].alias_of == "c"
    # a and b both die at c: Add writes in place over one of them; Tanh writes over x
    assert {p.node for p in plan.pairs} >= {"c"}
    assert plan.arena_bytes == 256 < plan.no_reuse_bound_bytes == 384


def quantized(shape, dtype=DType.INT8):
    graph = Graph("q")
    x = graph.add_input("x", dtype, shape, quant=QuantParams(np.array([0.1], np.float32), np.array([0])))
    return graph, x


@pytest.mark.parametrize("case, expected", [
    # 3x3 stride 1 pad 1 on 32x32x16: write of pixel (y, x) ends (y*32 + x + 1)*16, its first
    # read starts ((y-1)*32 + x-1)*16: distance (32 + 2)*16 = 544
    (((1, 32, 32, 16), 16, 3, 1, 1), 544),
    # 1x1 stride 1: pixel p writes [p*C, (p+1)*C) and still reads pixel p: one pixel
    (((1, 8, 8, 16), 16, 1, 1, 0), 16),
    # 3x3 stride 2 pad 1, 16 -> 16 channels: pixel (0, x) writes up to (x+1)*16 and reads
    # from column max(0, 2x-1): (x+1 - max(0, 2x-1))*16 is largest (16) at x = 0 and x = 1
    (((1, 16, 16, 16), 16, 3, 2, 1), 16),
])
def test_conv_overlap_distance_by_hand(case, expected):
    shape, out_channels, kernel, stride, pad = case
    graph, x = quantized(shape)
    w = graph.add_constant("w", np.ones((out_channels, kernel, kernel, shape[3]), np.int8))
    node = graph.add_node("Conv", [x, w], {"layout": "NHWC", "strides": (stride, stride), "pads": (pad,) * 4})
    assert overlap_distance(node, x) == expected


def test_elementwise_distance_and_refusals():
    graph, x = quantized((1, 4, 4, 8))
    widen = graph.add_node("QuantizeLinear", [x], {"to": "int16"})
    assert overlap_distance(widen, x) == 127      # (n - 1) * (2 - 1): the wider output runs ahead
    narrow = graph.add_node("DequantizeLinear", [x])
    assert overlap_distance(narrow, x) == 3 * 127  # int8 -> float32: (n - 1) * (4 - 1)
    nchw = Graph("nchw")
    y = nchw.add_input("y", DType.FLOAT32, (1, 2, 4, 4))
    w = nchw.add_constant("w", np.ones((2, 2, 1, 1), np.float32))
    conv = nchw.add_node("Conv", [y, w], {"layout": "NCHW"})
    assert "NHWC only" in overlap_distance(conv, y)
    concat = nchw.add_node("Concat", [y, y], {"axis": 1})
    assert "more than once" in overlap_distance(concat, y)
    resize = graph.add_node("Resize", [x], {"sizes": (1, 8, 8, 8)})
    assert "no access-order proof" in overlap_distance(resize, x)


def test_concat_overlap_distance_by_hand():
    """NHWC channel concat of a (16 ch) and b (16 ch) over 4x4 pixels: B = 16 blocks of
    O = 32 bytes, memmove copies: (B - 1)(O - L) + prefix; input a (L = 16, prefix 0):
    15*16 = 240; input b (prefix 16): 15*16 + 16 = 256 (memcpy needed 256 and 272)."""
    graph, a = quantized((1, 4, 4, 16))
    b = graph.add_input("b", DType.INT8, (1, 4, 4, 16))
    concat = graph.add_node("Concat", [a, b], {"axis": 3})
    assert (overlap_distance(concat, a), overlap_distance(concat, b)) == (240, 256)


def test_concat_on_channels_of_nhwc_is_not_done_in_place_when_producers_write_densely():
    """Sigmoid / Tanh kernels write dense outputs only (kernels/strided_output.py): no channel
    slices (tests/test_concat_channel_slices.py has the producers that write them)."""
    graph, x = quantized((1, 4, 4, 8))
    a = graph.add_node("Sigmoid", [x], name="a").outputs[0]
    b = graph.add_node("Tanh", [x], name="b").outputs[0]
    for value in (a, b):
        value.quant = x.quant
    out = graph.add_node("Concat", [a, b], {"axis": 3}, name="cat").outputs[0]
    out.quant = x.quant
    graph.outputs = [out]
    plan = plan_memory(graph, concat_in_place=True, time_limit=1.0)
    assert plan.elided_nodes == []
    assert not plan.channel_strides
    assert any("'a' (Sigmoid, kernel reference) does not write a strided output" in reason
               for node, reason in plan.reuse_refusals if node == "cat")


def test_pad_folded_into_conv_keeps_results():
    rng = np.random.default_rng(1)
    graph = Graph("pad")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 6, 6))
    padded = graph.add_node("Pad", [x], {"pads": (0, 0, 1, 2, 0, 0, 1, 0)}, name="pad").outputs[0]
    w = graph.add_constant("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    graph.outputs = [graph.add_node("Conv", [padded, w], {"layout": "NCHW"}, name="conv").outputs[0]]
    folded, names = fold_pads(graph)
    assert names == ["pad"] and [n.op for n in folded.nodes] == ["Conv"]
    assert folded.node("conv").attrs["pads"] == (1, 2, 1, 0)
    feeds = {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}
    expected = run_float(graph, feeds)[graph.outputs[0].name]
    np.testing.assert_allclose(run_float(folded, feeds)[folded.outputs[0].name], expected, rtol=1e-5, atol=1e-5)
    assert len(graph.nodes) == 2   # the input graph is untouched


def test_ledger_fits_and_overflows_with_peak():
    graph = branching_graph()
    roomy = deploy(graph, DeploymentOptions(target="stm32f407"))
    assert roomy.fits and "fits" in roomy.ledger.verdict()
    arena = roomy.plan.arena_bytes
    small = deploy(graph, DeploymentOptions(target="stm32f407", sram_limit=arena - 16))
    region = next(r for r in small.ledger.regions if r.region == small.plan.placement.arena_region)
    assert not small.fits and region.overflow > 0 and not small.plan.placement.arena_fits
    verdict = small.ledger.verdict()
    assert f"step {small.ledger.peak_step}" in verdict and "expand" in verdict and region.region in verdict


def load_model_quiet(name: str):
    """The model without the importer's "dynamic batch" warning in the test log (the level
    is restored: a global change would hide warnings other tests assert on)."""
    import logging

    from mcudeploy.importers import load_model
    logger = logging.getLogger("mcudeploy")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return load_model(shared_model(name))
    finally:
        logger.setLevel(previous)


def plan_cli(*argv: str) -> int:
    return cli_main(["plan", *argv, "--time-limit", "1"])


def test_plan_command_writes_json_and_png(tmp_path, capsys):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    assert plan_cli(str(model), "--target", "stm32h743", "--json", str(tmp_path / "p.json"),
                    "--png", str(tmp_path / "p.png")) == 0
    document = json.loads((tmp_path / "p.json").read_text())
    # 33,312 B with the reference kernels, 33,872 with the DSP variants' im2col scratch
    assert document["arena_bytes"] <= 34 * 1024 < document["no_reuse_bound_bytes"]
    assert document["fits"] and all("offset" in t for t in document["tensors"].values())
    assert document["options"]["target"] == "stm32h743" and document["arena_region"] == "DTCM"
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert "activations (peak)" in capsys.readouterr().out


def test_plan_json_to_stdout_is_only_json(capsys):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    assert plan_cli(str(model), "--target", "stm32h743", "--json", "-") == 0
    document = json.loads(capsys.readouterr().out)
    activations = next(line for line in document["ledger"] if line["item"] == "activations (peak)")
    assert document["arena_bytes"] == activations["bytes"] and activations["region"] == document["arena_region"]


def test_plan_command_reports_what_does_not_fit(capsys):
    assert plan_cli(str(shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite")), "--target", "stm32f103") == 8
    captured = capsys.readouterr()
    assert "memory ledger" in captured.out
    assert re.search(r"does not fit: .* by \d+ bytes.*peak at step \d+", captured.err)


@pytest.mark.parametrize("text", ["12Q", "-5", "lots"])
def test_bad_sizes_are_usage_errors(text, capsys):
    assert plan_cli(str(shared_model("mlperf_tiny/resnet8_int8.tflite")), "--reserve", text) == 2
    assert "--reserve" in capsys.readouterr().err


def test_plan_command_exports_tflm_offline_plan(tmp_path):
    model = shared_model("mlperf_tiny/dscnn_kws_int8.tflite")
    assert plan_cli(str(model), "--export-tflm", str(tmp_path / "offline.tflite"), "--json", str(tmp_path / "p.json")) == 0
    document = json.loads((tmp_path / "p.json").read_text())
    assert document["order"] == [n.name for n in load_model_quiet("mlperf_tiny/dscnn_kws_int8.tflite").nodes]
    from ai_edge_litert import schema_py_generated as schema
    exported = schema.ModelT.InitFromPackedBuf(bytearray((tmp_path / "offline.tflite").read_bytes()), 0)
    assert [m.name.decode() for m in exported.metadata].count("OfflineMemoryAllocation") == 1


def test_beam_schedule_is_heuristic_but_never_worse_than_file_order():
    graph = branching_graph()
    narrow = schedule(graph, alignment=16, beam_width=1)
    assert not narrow.exact
    assert narrow.peak <= narrow.file_order_peak
