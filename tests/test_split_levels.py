"""``[split] levels``: cut at the resolution levels, spill what crosses, tile each level until it
fits (plan/levels.py), and the search's pinning of what an automatic rule chose."""
from __future__ import annotations

import re

import pytest

from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.options import DeploymentOptions, TilingRegion
from mcudeploy.plan.levels import LevelsChoice, find_levels, level_cuts, why_not
from mcudeploy.search.records import pin_automatic
from mcudeploy.search.trial import Metrics, _pinned
from tiling_models import assert_same_outputs, random_feeds, unet

LIMIT = 120_000      # U-Net 64: its untiled arena is about 1 MB, each level alone far above this


def _options(**values) -> DeploymentOptions:
    return DeploymentOptions(**{"target": "stm32n6", "external_activations": False, "weights": "flash",
                                "sram_limit": LIMIT, **values})


@pytest.fixture(scope="module")
def levels_deployment():
    graph = unet(64)
    return graph, deploy(graph.copy(), _options(split_levels=True))


def test_the_cuts_are_where_the_levels_end():
    graph = unet(64)
    names = [graph.nodes[i].name for i in level_cuts(graph)]
    assert names == ["maxpool_9", "maxpool_18", "maxpool_27", "conv_34", "conv_45", "conv_56"]
    points, levels = find_levels(graph)
    assert points == tuple(names) and len(levels) == 7
    assert (levels[0].start, levels[0].end) == ("conv_3", "maxpool_9")      # the input relayout cannot start one


def test_levels_fit_the_limit_and_stay_bit_exact(levels_deployment):
    graph, deployment = levels_deployment
    untiled = deploy(graph.copy(), _options(external_activations=True))
    transform = deployment.memory_transform
    assert untiled.plan.arena_bytes > 4 * LIMIT
    assert deployment.fits and deployment.plan.arena_bytes <= LIMIT
    assert transform.split.rule == "levels" and transform.split.given[0] == "maxpool_9"
    assert transform.tiling.rule.startswith("levels:") and 0 < transform.tiling.overhead < 0.6
    assert deployment.plan.external_bytes > 0
    assert_same_outputs(graph, deployment.graph, random_feeds(graph, 1))


def test_a_lower_peak_buys_a_smaller_arena_with_more_macc(levels_deployment):
    graph, deployment = levels_deployment
    lower = deploy(graph.copy(), _options(split_levels=True, split_limit=int(0.6 * LIMIT)))
    assert lower.plan.arena_bytes < deployment.plan.arena_bytes
    assert lower.memory_transform.tiling.overhead >= deployment.memory_transform.tiling.overhead


def test_a_lower_peak_measures_the_patches_it_needs_into_the_kept_table(levels_deployment):
    """The table is measured once per room; a ceiling below it adds the patches of the levels
    that row stripes fit there only with PATCH_FROM stripes or more (the search's lower peaks)."""
    from mcudeploy.plan import memory_transform
    from mcudeploy.plan.levels import PATCH_FROM
    graph, _ = levels_deployment
    table = next(t for t in memory_transform._LEVELS.values() if t.levels and t.levels[0].start == "conv_3")
    before = set(table.patched)
    peak = int(0.45 * LIMIT)
    deploy(graph.copy(), _options(split_levels=True, split_limit=peak))
    assert table is next(t for t in memory_transform._LEVELS.values() if t.levels and t.levels[0].start == "conv_3")

    def rows_only(level):
        fitting = [c for c in level.counts if c.count[1] == 1 and c.need <= peak]
        return min(fitting, key=lambda c: c.added_macc).count[0] if fitting else None

    wide = {i for i, level in enumerate(table.levels) if (rows_only(level) or PATCH_FROM) >= PATCH_FROM}
    assert wide - before, "the lower peak needs patches the room's table did not measure"
    assert wide <= table.patched
    assert all(any(c.count[1] > 1 for c in table.levels[i].counts) for i in table.patched)


def test_the_search_pins_the_choice_so_it_replays_without_searching(levels_deployment):
    graph, deployment = levels_deployment
    extra = _pinned(deployment.memory_transform)
    assert extra["pinned_split_points"][0] == "maxpool_9" and extra["pinned_tiling_regions"]
    pinned = pin_automatic(_options(split_levels=True), Metrics(extra=extra))
    assert not pinned.split_levels and pinned.tiling_regions and pinned.split_points
    replay = deploy(graph.copy(), pinned)
    assert replay.plan.arena_bytes == deployment.plan.arena_bytes
    assert replay.plan.external_bytes == deployment.plan.external_bytes
    assert len(replay.graph.nodes) == len(deployment.graph.nodes)


def test_a_split_by_tensors_is_not_pinned():
    graph = unet(64)
    deployment = deploy(graph, DeploymentOptions(target="stm32n6", split_auto=True, split_limit=300_000,
                                                 tiling_regions=(TilingRegion("resize_59", "conv_71", 8),)))
    assert deployment.memory_transform.split.tensors
    assert _pinned(deployment.memory_transform) == {}


@pytest.mark.parametrize("values,message", [
    (dict(split_levels=True, tiling_auto=True), r"levels chooses the tiling and the cuts itself; drop \[tiling\] auto"),
    (dict(split_levels=True, split_points=("maxpool_9",)), r"drop \[split\] points"),
    (dict(split_levels=True, target="stm32h743"), r"stm32h743' has no external RAM"),
])
def test_bad_levels_options(values, message):
    options = {"target": "stm32n6", "sram_limit": LIMIT, **values}
    with pytest.raises(UsageError, match=message):
        deploy(unet(64), DeploymentOptions(**options))


@pytest.mark.slow
def test_levels_code_is_bit_exact_on_the_host():
    from test_tiling_codegen import assert_c_matches_untiled
    graph = unet(32)      # U-Net 32 under 40 KB: 127 nodes, the same rules at a size the host runs fast
    options = _options(split_levels=True, sram_limit=40_000)
    deployment, _ = assert_c_matches_untiled(graph, options, random_feeds(graph, 1), "host")
    assert deployment.fits and deployment.plan.transfers and deployment.memory_transform.tiling.regions


def test_the_critical_limit_bisects_the_choice_not_a_new_rewrite(levels_deployment):
    from mcudeploy.search.engine import pinned_config
    from mcudeploy.search.trial import Trial
    _, deployment = levels_deployment
    trial = Trial({"split_levels": True, "split_limit": 1000}, "PASS",
                  metrics=Metrics(extra=_pinned(deployment.memory_transform)))
    config = pinned_config(trial)
    assert config["split_levels"] is False and config["split_limit"] is None
    assert config["split_points"][0] == "maxpool_9" and config["tiling_regions"]
    assert pinned_config(Trial({"alignment": 4}, "PASS", metrics=Metrics())) == {"alignment": 4}


def test_a_float_edge_that_cannot_fit_names_the_int8_io_command():
    """A choice whose peak is in the part holding a float model output (the U-Net 512 with
    float I/O: its 1 MiB float buffers are larger than a bank) says int8 I/O; one whose peak is
    in a level says how to go lower. (At 64x64 the float buffers never bind: the message is
    checked on the choice.)"""
    import sys
    import tempfile
    from pathlib import Path

    import numpy as np
    import onnx

    from conftest import REPO
    from mcudeploy.driver import deployable_graph
    from mcudeploy.importers import load_model
    from mcudeploy.quantize.apply import quantize_graph
    from mcudeploy.quantize.calibration import calibrate, load_calibration
    from mcudeploy.quantize.observers import observed_range
    from mcudeploy.quantize.prepare import prepare_for_quantization
    from mcudeploy.quantize.quantizer import QuantizationConfig
    from mcudeploy.quantize.quantizer import _options as quantize_options
    sys.path.insert(0, str(REPO / "tools"))
    from make_unet import make_unet
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "unet64.onnx"
        onnx.save(make_unet(64), path)
        graph = load_model(path)
    config = QuantizationConfig(progress=False)
    prepared = prepare_for_quantization(graph)
    data = [np.random.default_rng(0).standard_normal((1, 1, 64, 64)).astype(np.float32)]
    observed = calibrate(prepared, load_calibration(data, prepared), progress=False)
    ranges = {name: observed_range(sample, config.observer) for name, sample in observed.items()}
    float_io = deployable_graph(quantize_graph(prepared, ranges, quantize_options(config)).graph)
    points, levels = find_levels(float_io)
    last = LevelsChoice(points, levels, arena_after=50_000, limit=40_000, hot_part=len(points))
    assert re.search(r"part resize_59\.\..*float model input / output 'conv_71' \(16,384 B\).*--int8-io",
                     why_not(float_io, last))
    deep = LevelsChoice(points, levels, arena_after=50_000, limit=40_000, hot_part=4)
    assert "no tile count of that part goes lower" in why_not(float_io, deep)
    with pytest.raises(UsageError, match=r"\[split\] levels: the on-chip arena needs \d+ B, above the 20000 B"):
        deploy(float_io, _options(split_levels=True, sram_limit=20_000))


def test_a_level_needs_the_same_bytes_whatever_the_other_levels_tiles():
    """Levels are independent once split, so a level's need at a count is the same with the
    other levels tiled at that count or untiled. Planned together, one allocator choice and an
    optimal solver's freedom below the peak part set the other parts' tops (U-Net 512: its
    first level at 32 stripes measured 819,776 B beside a 1.4 MB last level, 557,696 B alone);
    each time-disjoint part is now placed on its own (plan/memory_plan.py ``_time_clusters``)."""
    from mcudeploy.plan.levels import LevelsTable
    from mcudeploy.plan.memory_transform import _planner
    from mcudeploy.targets import load_target
    graph = unet(64)
    options = _options(split_levels=True, schedule="file", time_limit=1.0)
    together = LevelsTable(graph, _planner(load_target("stm32n6"), options))
    together.measure((4, 1), list(range(len(together.levels))))
    for index in (0, len(together.levels) - 1):
        alone = LevelsTable(graph, _planner(load_target("stm32n6"), options))
        alone.measure((4, 1), [index])
        assert alone.levels[index].counts[0].need == together.levels[index].counts[0].need
    needs = [level.counts[0].need for level in together.levels]
    assert len(set(needs)) > 1          # the parts differ: not every one reported at the peak


def test_a_trial_says_what_the_next_trial_of_the_same_levels_reuses():
    """The search predicts a levels trial's cost from the ones before it less the table they
    kept (search/engine.py ``_expected_seconds``): the first trial reports its table's seconds
    as reusable, a second one with the same key measures no table."""
    from mcudeploy.plan import memory_transform
    from mcudeploy.search.reasons import Constraints
    from mcudeploy.search.trial import evaluate
    from mcudeploy.targets import load_target
    memory_transform._LEVELS.clear()
    graph = unet(64)
    first = evaluate(graph, load_target("stm32n6"), _options(split_levels=True), Constraints())[1]
    second = evaluate(graph, load_target("stm32n6"), _options(split_levels=True, weights="auto"), Constraints())[1]
    assert first.metrics.extra["reusable_seconds"] > 0
    assert second.metrics.extra["reusable_seconds"] == 0
