"""Spatial tiling (passes/tile_spatial.py, plan/tiling.py): the receptive-field arithmetic on
hand-computed cases, the rewrite's structure, bit-exactness against the UNTILED integer
reference on the shared int8 models, U-Nets and MobileNetV2 (2, 4, 8 stripes and 2x2
patches), the planner's views / in-place concats and the peak they give, and every bad
input as a UsageError naming the node."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import INT8_MODELS
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import TilingRegion, parse_options
from mcudeploy.passes.tile_geometry import axis_window
from mcudeploy.passes.tile_spatial import partition, total_macc
from mcudeploy.plan.memory_plan import plan_memory
from mcudeploy.plan.tiling import apply_tiling, auto_tiling, longest_region
from tiling_models import assert_same_outputs, mobilenet_v2, random_feeds, shared_int8, unet

TILINGS = [(2, 1), (4, 1), (8, 1), (2, 2)]
UNTILABLE = {"mlperf_tiny/fc_autoencoder_int8.tflite", "tflite_micro/hello_world_int8.tflite"}
NO_COLUMNS = {"mlperf_tiny/streaming_wakeword_int8.tflite"}   # W = 1: row stripes only


def conv_chain(height: int = 12) -> Graph:
    """x -> conv 3x3 s1 p1 -> conv 3x3 s2 pads (0,0,1,1) -> maxpool 2x2 -> softmax -> reshape
    (float, NHWC)."""
    rng = np.random.default_rng(0)
    graph = Graph("chain")
    x = graph.add_input("x", DType.FLOAT32, (1, height, 8, 2))
    w1 = graph.add_constant("w1", rng.standard_normal((4, 3, 3, 2)).astype(np.float32))
    w2 = graph.add_constant("w2", rng.standard_normal((4, 3, 3, 4)).astype(np.float32))
    a = graph.add_node("Conv", [x, w1], {"layout": "NHWC", "pads": (1, 1, 1, 1)}, name="c1").outputs[0]
    b = graph.add_node("Conv", [a, w2], {"layout": "NHWC", "pads": (0, 0, 1, 1), "strides": (2, 2)},
                       name="c2").outputs[0]
    c = graph.add_node("MaxPool", [b], {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (2, 2)},
                       name="pool").outputs[0]
    soft = graph.add_node("Softmax", [c], name="softmax").outputs[0]
    graph.add_node("Reshape", [soft], {"shape": (1, 24)}, name="flat")
    graph.outputs = [graph.nodes[-1].outputs[0]]
    verify(graph)
    return graph


def test_window_keeps_the_pads_at_the_image_borders_only():
    graph = conv_chain()
    c1, c2 = graph.node("c1"), graph.node("c2")
    # stride 2, pads (top 0, bottom 1), 12 rows in: output rows [0, 3) read rows [0, 7), no pad
    assert axis_window(c2, 1, (0, 3)).inputs[0] == (0, 7) and axis_window(c2, 1, (0, 3)).pads == (0, 0)
    # the last output row 5 reads rows 10..12: row 12 is the bottom pad
    last = axis_window(c2, 1, (3, 6))
    assert last.inputs[0] == (6, 12) and last.pads == (0, 1)
    # stride 1, pad 1: the first stripe keeps the top pad, an inner one has a real halo
    assert axis_window(c1, 1, (0, 4)).pads == (1, 0) and axis_window(c1, 1, (0, 4)).inputs[0] == (0, 5)
    assert axis_window(c1, 1, (4, 8)).pads == (0, 0) and axis_window(c1, 1, (4, 8)).inputs[0] == (3, 9)


def test_partition_covers_the_rows():
    assert partition(10, 4) == [(0, 2), (2, 5), (5, 8), (8, 10)]


def test_rewrite_structure_slices_tiles_and_one_concat():
    graph = conv_chain()
    before = total_macc(graph)
    (record,) = apply_tiling(graph, (TilingRegion("c1", "pool", 3),))
    verify(graph)
    ops = [n.op for n in graph.nodes]
    assert ops.count("Conv") == 6 and ops.count("MaxPool") == 3 and ops.count("Concat") == 1
    assert graph.node("c2@tile0").attrs["pads"] == (0, 0, 0, 1)          # left/right kept, no bottom pad
    assert graph.node("c2@tile2").attrs["pads"][2] == 1                  # the last stripe keeps it
    assert graph.node("pool@tiles").outputs[0].name == "pool"            # the region output keeps its name
    assert record.macc_after > record.macc_before and total_macc(graph) - before == \
        record.macc_after - record.macc_before


@pytest.mark.parametrize("model", INT8_MODELS)
def test_shared_models_tiled_are_bit_exact_with_the_untiled_reference(model):
    graph = shared_int8(model)
    region = longest_region(graph, min_rows=8)
    if model in UNTILABLE:
        assert region is None
        return
    feeds = random_feeds(graph, 2, seed=1)
    for rows, columns in TILINGS:
        if columns > 1 and model in NO_COLUMNS:
            with pytest.raises(UsageError, match="has only 1 columns"):
                apply_tiling(graph.copy(), (replace(region, rows=rows, columns=columns),))
            continue
        tiled = graph.copy()
        apply_tiling(tiled, (replace(region, rows=rows, columns=columns),))
        verify(tiled)
        assert_same_outputs(graph, tiled, feeds)


UNET_REGIONS = {
    "whole network": ("conv_3", "conv_71"),
    "decoder level 0": ("resize_59", "conv_71"),
    "encoder level 0 (skip + pooled outputs)": ("conv_3", "maxpool_9"),
}


@pytest.mark.parametrize("rows,columns", TILINGS)
@pytest.mark.parametrize("region", list(UNET_REGIONS))
def test_unet_tiled_is_bit_exact(region, rows, columns):
    graph = unet(64)
    tiled = graph.copy()
    apply_tiling(tiled, (TilingRegion(*UNET_REGIONS[region], rows, columns),))
    assert_same_outputs(graph, tiled, random_feeds(graph, 1, seed=rows))


def test_nested_tiles_and_mobilenet_v2_transpose_are_bit_exact():
    graph = unet(64)
    nested = graph.copy()
    apply_tiling(nested, (TilingRegion("conv_3", "conv_71", 2),
                          TilingRegion("resize_59@tile0", "conv_71@tile0", 4)))
    assert_same_outputs(graph, nested, random_feeds(graph, 1))
    mobilenet = mobilenet_v2()
    tiled = mobilenet.copy()
    start, end = mobilenet.nodes[0].name, mobilenet.nodes[13].name    # NCHW->NHWC Transpose .. stage 3
    assert mobilenet.nodes[0].op == "Transpose"
    apply_tiling(tiled, (TilingRegion(start, end, 4),))
    assert_same_outputs(mobilenet, tiled, random_feeds(mobilenet, 2))


def test_planner_makes_stripes_views_and_the_concat_in_place_and_the_peak_drops():
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    names = [n.name for n in graph.nodes]
    untiled = plan_memory(graph, io_in_arena=False)
    tiled = graph.copy()
    apply_tiling(tiled, (TilingRegion(names[0], names[3], 8),))
    plan = plan_memory(tiled, io_in_arena=False)
    assert f"{names[3]}@tiles" in plan.elided_nodes                    # the H-Concat is done in place
    whole = tiled.node(f"{names[3]}@tiles").outputs[0].name
    assert all(plan.tensors[f"{names[3]}@tile{k}"].alias_of == whole for k in range(8))
    # the memory-aware order runs each stripe's chain depth first, one stripe after the other
    for k in range(8):
        steps = [plan.order.index(f"{name}@tile{k}") for name in names[:4]]
        assert steps == list(range(steps[0], steps[0] + 4))
    assert plan.arena_bytes * 1.8 <= untiled.arena_bytes
    # with the graph input in the arena, a stripe of it is a view (no copy, no kernel call)
    in_arena = plan_memory(tiled)
    stripes = [f"{tiled.inputs[0].name}@tile{k}" for k in range(8)]
    assert set(stripes) <= set(in_arena.elided_nodes)
    assert [in_arena.tensors[s].offset - in_arena.tensors[tiled.inputs[0].name].offset for s in stripes][:2] == \
        [0, tiled.node(stripes[1]).attrs["starts"][0] * 96 * 3]


@pytest.mark.slow
def test_auto_tiling_reaches_a_limit_within_the_overhead():
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    feeds = random_feeds(graph, 1)
    tiled = graph.copy()
    def planner(g):      # the file order: no search deadline, so the same figures on a busy machine
        return plan_memory(g, io_in_arena=False, schedule="file")
    choice = auto_tiling(tiled, planner, limit=20000, max_overhead=0.15, mode="rows", alignment=16,
                         io_in_arena=False)
    assert choice.regions and choice.arena_after <= 20000 < choice.arena_before
    assert 0 < choice.overhead <= 0.15
    assert planner(tiled).arena_bytes == choice.arena_after
    assert_same_outputs(graph, tiled, feeds)


@pytest.mark.slow
def test_auto_tiling_also_starts_from_the_whole_network():
    """U-Net 256: the best first region alone (the decoder in patches) stops at 1.8x; the
    whole network in column stripes, then its top decoder level tiled inside each stripe,
    reaches 2x within 15 % MACC (rule 6 of plan/tiling.py). Bit-exact with the untiled graph."""
    graph = unet(256)
    tiled = graph.copy()
    def planner(g):      # memory-aware order (the driver's default), as the tiling bench plans
        return plan_memory(g, io_in_arena=False, time_limit=2.0)
    choice = auto_tiling(tiled, planner, limit=None, max_overhead=0.15, mode="patches", alignment=16,
                         io_in_arena=False)
    whole = longest_region(graph)
    assert (choice.regions[0].start, choice.regions[0].end) == (whole.start, whole.end)
    assert choice.arena_before >= 2 * choice.arena_after and choice.overhead <= 0.15
    assert_same_outputs(graph, tiled, random_feeds(graph, 1))


@pytest.mark.slow
def test_auto_tiling_builds_and_plans_each_candidate_once():
    """A candidate (its regions) is built, scored and planned once, however many first steps
    and greedy steps meet it; a tile count over the MACC budget rules out the larger ones of
    its span unbuilt (plan/tiling.py, "What a candidate costs")."""
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    plans = []
    def planner(g):
        plans.append(tuple(n.name for n in g.nodes))
        return plan_memory(g, io_in_arena=False, schedule="file")
    choice = auto_tiling(graph.copy(), planner, limit=None, max_overhead=0.05, mode="rows", alignment=16,
                         io_in_arena=False)
    assert len(plans) == choice.planned + 1 == len(set(plans))         # the untiled plan, then each once
    assert choice.built < choice.trials
    assert choice.to_json()["built"] == choice.built and choice.seconds > 0


def test_an_auto_tiling_that_stops_above_its_limit_is_a_warning_with_advice():
    """With the I/O in the arena, no region of VWW lowers the arena: the user who asked for a
    limit hears so, and what to try, instead of silently getting the untiled model."""
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    options = parse_options({"target": {"name": "stm32h743"}, "kernels": {"variant": "reference"},
                             "tiling": {"auto": True, "limit": 30000}}, "test.toml")
    deployment = deploy(graph, options)
    [warning] = [w for w in deployment.warnings if w.startswith("[tiling] auto")]
    assert deployment.plan.arena_bytes > 30000 and "above the limit of 30000 bytes within 15% extra MACC" in warning
    assert "max_overhead" in warning and "[split] auto = true" in warning
    untouched = deploy(graph, replace(options, tiling_limit=None))       # no limit given: nothing to say
    assert not any(w.startswith("[tiling]") for w in untouched.warnings)


@pytest.mark.slow
def test_an_automatic_tiling_is_kept_for_the_trials_that_do_not_change_it():
    """plan/memory_transform.py: the same graph, target, limit and planner options re-apply the
    regions found (rule says "cached"); an option the tiling reads searches again."""
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    options = parse_options({"target": {"name": "stm32h743"}, "kernels": {"variant": "reference"},
                             "memory": {"io_in_arena": False},
                             "tiling": {"auto": True, "limit": 20000, "max_overhead": 0.11}}, "test.toml")
    first = deploy(graph, options)
    again = deploy(graph, replace(options, stack=8192, weights="flash"))        # options the tiling does not read
    other = deploy(graph, replace(options, tiling_max_overhead=0.12))
    assert "(cached)" not in first.memory_transform.tiling.rule
    assert again.memory_transform.tiling.rule == first.memory_transform.tiling.rule + " (cached)"
    assert again.memory_transform.tiling.regions == first.memory_transform.tiling.regions
    assert again.plan.arena_bytes == first.plan.arena_bytes
    assert [n.name for n in again.graph.nodes] == [n.name for n in first.graph.nodes]
    assert "(cached)" not in other.memory_transform.tiling.rule


def test_deploy_with_tiling_options_from_toml():
    model = "mlperf_tiny/mobilenetv1_vww_int8.tflite"
    graph = shared_int8(model)
    names = [n.name for n in graph.nodes]
    document = {"tiling": {"regions": [{"start": names[0], "end": names[3], "tiles": [2, 2]}]}}
    options = parse_options(document, "test.toml")
    assert options.tiling_regions == (TilingRegion(names[0], names[3], 2, 2),)
    assert "tiles = [2, 2]" in options.to_toml()
    deployment = deploy(graph, options)
    assert check_deployment(deployment) == []
    summary = deployment.to_json()["memory_transform"]["tiling"]
    assert summary["regions"][0]["tiles"] == [2, 2] and summary["macc_overhead"] > 0


@pytest.mark.parametrize("table,message", [
    ({"start": "a", "end": "b", "tiles": 0}, "positive count"),
    ({"start": "a", "end": "b", "tiles": 1}, "one tile"),
    ({"start": "a", "tiles": 2}, "start, end, tiles"),
    ({"start": "a", "end": "b", "mode": "diagonal"}, "not one of rows, patches"),
])
def test_bad_tiling_options(table, message):
    with pytest.raises(UsageError, match=message):
        parse_options({"tiling": {"regions": [table]}}, "bad.toml")


@pytest.mark.parametrize("region,message", [
    (TilingRegion("c1", "softmax", 2), r"node 'softmax' \(Softmax\) cannot be tiled: Softmax normalises"
                                       r".*Tilable layers: Conv"),
    (TilingRegion("flat", "flat", 2), r"node 'flat' \(Reshape\) cannot be tiled"),
    (TilingRegion("c1", "pool", 4), r"4 tiles along rows but the output of 'pool'.*only 3 rows"),
    (TilingRegion("c1", "pool", 2, 3), r"only 2 columns"),
    (TilingRegion("conv1", "pool", 2), r"no node 'conv1'.*fused.*did you mean"),
    (TilingRegion("pool", "c1", 2), r"'c1' does not depend on 'pool'"),
])
def test_bad_regions_name_the_node_and_what_can_be_tiled(region, message):
    with pytest.raises(UsageError, match=message):
        apply_tiling(conv_chain(), (region,))


def test_global_pooling_and_fully_connected_cannot_be_tiled():
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    names = {n.op: n.name for n in graph.nodes}
    for op in ("AveragePool", "Gemm"):    # the 3x3 average over the whole map, the classifier
        with pytest.raises(UsageError, match=rf"node '{names[op]}' \({op}\) cannot be tiled.*Tilable layers"):
            apply_tiling(graph.copy(), (TilingRegion(names[op], names[op], 2),))


def test_channel_split_of_conv_and_depthwise_is_bit_exact_and_tilable():
    graph = shared_int8("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    names = [n.name for n in graph.nodes]
    options = parse_options({"tiling": {"channel_splits": {names[2]: 4, names[1]: 2},     # pointwise, depthwise
                                        "regions": [{"start": names[0], "end": names[3], "tiles": 4}]}}, "t.toml")
    assert dict(options.channel_splits) == {names[2]: 4, names[1]: 2}
    assert "channel_splits = {" in options.to_toml()
    deployment = deploy(graph, options)
    ops = [n.op for n in deployment.graph.nodes if n.name.startswith(names[2])]
    assert ops.count("Conv") == 4 * 4 and ops.count("Concat") == 4         # 4 groups in each of 4 stripes
    assert check_deployment(deployment) == []
    assert_same_outputs(graph, deployment.graph, random_feeds(graph, 2))


@pytest.mark.parametrize("node,groups,message", [
    ("pool", 2, r"only an NHWC Conv"), ("c1", 9, r"9 groups for 4 output channels"),
    ("relu9", 2, r"no node 'relu9'"),
])
def test_bad_channel_splits(node, groups, message):
    from mcudeploy.passes.base import run_passes
    from mcudeploy.passes.split_channels import SplitChannels
    with pytest.raises(UsageError, match=message):
        run_passes(conv_chain(), [SplitChannels({node: groups})])
