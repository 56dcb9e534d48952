"""The compile-option search: the option space as data, every failure reason with its numbers,
pruning by bounds, exact critical limits by bisection, the Pareto front, determinism across
worker counts, the trial log, and bad input."""
from __future__ import annotations

import json
import math

import pytest

from conftest import shared_model
from mcudeploy.driver import deploy
from mcudeploy.errors import McuDeployError, UsageError
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions, option_fields
from mcudeploy.search import Constraints, SearchRequest, run_search
from mcudeploy.search.critical import boundary
from mcudeploy.search.pareto import best_trial, objective_key, pareto_front
from mcudeploy.search.reasons import ALIGNMENT, FLASH_NOFIT, NPU_CONSTRAINT, RAM_NOFIT, trial_reasons
from mcudeploy.search.space import KNOB_NAMES, SpaceContext, build_space, check_knob_values, load_space_file, normalise
from mcudeploy.search.trial import Metrics, Trial, evaluate
from mcudeploy.targets import load_target

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"


def conv_graph(channels: int = 24, kernel: int = 3, size: int = 16) -> Graph:
    """int8 NHWC: input 8 channels -> conv to ``channels`` -> conv to 16 (reads ``channels``)."""
    import numpy as np

    from mcudeploy.ir import QuantParams
    graph = Graph("convs")
    quant = QuantParams(np.array([0.05], np.float32), np.array([0]))
    x = graph.add_input("x", DType.INT8, (1, size, size, 8), quant=quant, layout="NHWC")

    def conv(source, out_channels, name, k):
        in_channels = source.shape[3]
        weights = graph.add_constant(f"{name}_w", np.ones((out_channels, k, k, in_channels), np.int8),
                                     quant=QuantParams(np.full(out_channels, 0.01, np.float32),
                                                       np.zeros(out_channels, np.int64), axis=0))
        bias = graph.add_constant(f"{name}_b", np.zeros(out_channels, np.int32),
                                  quant=QuantParams(np.full(out_channels, 0.0005, np.float32),
                                                    np.zeros(out_channels, np.int64), axis=0))
        node = graph.add_node("Conv", [source, weights, bias], {"layout": "NHWC", "pads": [k // 2] * 4}, name=name)
        node.outputs[0].quant, node.outputs[0].layout = quant, "NHWC"
        return node.outputs[0]
    y = conv(conv(x, channels, "first", kernel), 16, "second", 3)
    graph.outputs = [y]
    verify(graph)
    return graph


# -- the option space ---------------------------------------------------------------------
def test_every_knob_is_a_deployment_option_and_locked_knobs_do_not_vary():
    assert set(KNOB_NAMES) <= set(option_fields())
    context = SpaceContext(load_target("stm32h743"), DeploymentOptions(target="stm32h743"))
    space = build_space(context, locked=frozenset({"schedule", "alignment"}))
    assert space.values["schedule"] == ("memory-aware",) and space.values["alignment"] == (16,)
    assert space.values["reuse"] == (True, False)
    assert {"DTCM", "AXI_SRAM"} <= set(space.values["activation_region"]) and "ITCM" not in space.values["activation_region"]
    assert space.values["external_activations"] == (True, False) or space.values["external_activations"] == (True,)


def test_normalise_drops_knobs_that_do_not_apply():
    assert normalise({"reuse": False, "overlap": False})["overlap"] is True
    assert normalise({"reuse": True, "overlap": False})["overlap"] is False


def test_space_file_unknown_knob_or_value_is_one_clear_error(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text('[space]\nscheduel = ["file"]\n')
    with pytest.raises(UsageError, match="unknown knob 'scheduel'.*schedule"):
        load_space_file(path)
    path.write_text('[space]\nschedule = ["random"]\n')
    with pytest.raises(UsageError, match="knob 'schedule'.*memory-aware, file"):
        load_space_file(path)
    path.write_text('[space]\nalignment = [3]\n')
    with pytest.raises(UsageError, match="power of two"):
        load_space_file(path)
    assert check_knob_values("activation_region", ["auto", "DTCM"], "x") == [None, "DTCM"]


# -- reasons with numbers ----------------------------------------------------------------
def test_ram_nofit_carries_the_ledgers_numbers():
    from test_search_split_arena import five_alive
    deployment = deploy(five_alive(), DeploymentOptions(target="stm32h743", reuse=False, schedule="file"))
    reasons = [r for r in trial_reasons(deployment, None, Constraints()) if r.code == RAM_NOFIT]
    region = next(r for r in deployment.ledger.regions if r.overflow)
    assert reasons[0].data["region"] == region.region
    assert reasons[0].data["needed"] == region.used and reasons[0].data["available"] == region.capacity
    assert reasons[0].data["step"] == deployment.ledger.peak_step and len(reasons[0].data["alive"]) >= 4
    assert str(region.used) in reasons[0].message and "peak at step" in reasons[0].message


def test_flash_limit_alignment_and_npu_constraint_reasons():
    deployment = deploy(conv_graph(24, kernel=9), DeploymentOptions(target="npu-mcu", executor="vendor-npu"))
    reasons = trial_reasons(deployment, None, Constraints(flash_limit=100, npu_only=True, strict_alignment=True))
    codes = [r.code for r in reasons]
    assert FLASH_NOFIT in codes
    alignment = [r for r in reasons if r.code == ALIGNMENT]
    assert [r.data["node"] for r in alignment] == ["second"] and "24 % 16 = 8" in alignment[0].message
    npu = [r for r in reasons if r.code == NPU_CONSTRAINT]
    assert npu and npu[0].data == {"node": "first", "predicate": "kernel-too-large"}
    assert trial_reasons(deploy(conv_graph(32), DeploymentOptions(target="npu-mcu", executor="vendor-npu")), None,
                         Constraints(strict_alignment=True)) == []


def test_an_error_in_a_trial_is_a_fail_unsupported_but_in_the_first_it_is_raised():
    target = load_target("stm32h743")
    _, trial = evaluate(conv_graph(), target, DeploymentOptions(target="stm32h743", activation_region="FLASH"),
                        Constraints())
    assert trial.status == "FAIL" and trial.reasons[0].code == "UNSUPPORTED" and "read-only" in trial.reasons[0].message
    with pytest.raises(McuDeployError):
        evaluate(conv_graph(), target, DeploymentOptions(target="stm32h743", activation_region="FLASH"),
                 Constraints(), raise_errors=True)


# -- ranking, bisection -------------------------------------------------------------------
def fake(index: int, latency: float | None, on_chip: int, flash: int = 0, status: str = "PASS") -> Trial:
    return Trial({}, status, metrics=Metrics(latency_us=latency, on_chip_bytes=on_chip, flash_bytes=flash), index=index)


def test_pareto_front_and_objectives():
    trials = [fake(0, 10.0, 100), fake(1, 5.0, 200), fake(2, 12.0, 120), fake(3, 5.0, 200),
              fake(4, 1.0, 50, status="FAIL"), fake(5, None, 90)]
    assert [t.index for t in pareto_front(trials)] == [0, 1, 5]
    assert best_trial(trials, "memory").index == 5
    assert best_trial(trials, "latency").index == 1
    assert best_trial(trials, "balanced").index in (0, 1)
    assert objective_key(trials[5], "latency")[0] == math.inf


@pytest.mark.parametrize("critical", [0, 1, 777, 4095, 4096])
def test_bisection_finds_the_exact_boundary_in_log_steps(critical):
    runs = []

    def run(value):
        runs.append(value)
        return Trial({}, "PASS" if value >= critical else "FAIL")
    found = boundary(range(0, 4097), run)
    assert found.passing == critical and (found.failing == critical - 1 or critical == 0)
    assert len(runs) <= math.ceil(math.log2(4097)) + 2


# -- the search -----------------------------------------------------------------------------
def test_search_is_never_worse_than_the_defaults_and_its_critical_limit_is_exact(tmp_path):
    model = shared_model(RESNET8)
    log = tmp_path / "search.log"
    result = run_search(model, SearchRequest(target="stm32h743", budget=16, log_path=log))
    default, best = result.default, result.best
    assert default.passed and best is not None
    assert objective_key(best, "memory") <= objective_key(default, "memory")[:-1] + (math.inf,)
    limit = result.critical.passing
    options = result.best_options()
    assert deploy(model, options.with_values(sram_limit=limit)).fits
    assert not deploy(model, options.with_values(sram_limit=limit - 1)).fits
    lines = log.read_text().splitlines()
    assert lines[1].startswith("Trial 0 [defaults]: config {") and " - PASS (latency " in lines[1]
    records = [json.loads(line) for line in (tmp_path / "search.log.jsonl").read_text().splitlines()]
    trials = [r for r in records if "trial" in r]
    assert len(trials) >= len(result.trials) and trials[0]["status"] == "PASS"
    assert any(r["status"] == "FAIL" and r["reasons"][0]["code"] == RAM_NOFIT for r in trials)


def test_pruned_configurations_cost_no_trial_and_say_why():
    from test_search_split_arena import five_alive
    base = DeploymentOptions(target="stm32h743", reuse=False, schedule="file")
    result = run_search(five_alive(), SearchRequest(target="stm32h743", options=base, budget=12, fixes=False,
                                                    locked=frozenset({"reuse", "schedule", "split_arena"})))
    assert result.pruned > 0 and result.best is None
    log_reasons = [t for t in result.trials if t.status == "SKIP"]
    assert log_reasons == []          # SKIPs are not trials


def test_search_is_deterministic_and_independent_of_the_worker_count():
    model = shared_model(RESNET8)
    runs = [run_search(model, SearchRequest(target="stm32f746", budget=12, seed=3, jobs=jobs, critical_limit=False))
            for jobs in (1, 1, 2)]
    signatures = [[(t.index, json.dumps(t.config, sort_keys=True, default=str), t.status,
                    t.metrics.on_chip_bytes if t.metrics else None) for t in r.trials] for r in runs]
    assert signatures[0] == signatures[1] == signatures[2]


@pytest.mark.parametrize("request_values,message", [
    ({"budget": 0}, "at least one trial"),
    ({"objective": "speed"}, "choose one of memory, latency, balanced"),
    ({"jobs": 0}, "at least one worker"),
    ({"budget": None, "time_limit": None}, "budget of trials"),
])
def test_bad_requests_are_one_clear_error(request_values, message):
    with pytest.raises(UsageError, match=message):
        run_search(conv_graph(), SearchRequest(**{"target": "stm32h743", **request_values}))


def test_a_target_with_no_memory_for_activations_is_refused(tmp_path):
    path = tmp_path / "flash_only.toml"
    path.write_text('name = "flash-only"\n[core]\nname = "Cortex-M4"\nclock_mhz = 80\n'
                    '[[regions]]\nname = "FLASH"\nbase = 0x08000000\nsize = "1M"\nkind = "flash"\naccess = "r"\n')
    with pytest.raises(UsageError, match="no memory the activations may use"):
        run_search(conv_graph(), SearchRequest(target=str(path), budget=2))


def test_the_log_written_so_far_is_kept_when_a_search_stops_on_an_error(tmp_path, monkeypatch):
    from mcudeploy.search import workers
    calls = {"count": 0}
    real = workers.run_config

    def failing(config):
        calls["count"] += 1
        if calls["count"] > 3:
            raise UsageError("stopped on purpose")
        return real(config)
    monkeypatch.setattr(workers, "run_config", failing)
    log = tmp_path / "stopped.log"
    with pytest.raises(UsageError, match="on purpose"):
        run_search(conv_graph(), SearchRequest(target="stm32h743", budget=20, log_path=log))
    trials = [line for line in log.read_text().splitlines() if line.startswith("Trial ")]
    assert len(trials) >= 4 and trials[0].startswith("Trial 0")


def test_a_levels_incumbent_descends_its_split_limit_under_the_memory_objective():
    """split_limit below the space's bank-size peaks: fractions of the incumbent's own arena,
    each improvement the next step down (strategy.descent); never for another objective, an
    arena off chip or a configuration without levels."""
    from mcudeploy.search.strategy import DESCENT, DESCENT_STEP, descent
    levels = Trial({"split_levels": True, "split_limit": None}, "PASS",
                   metrics=Metrics(latency_us=1.0, on_chip_bytes=400_000, arena_bytes=350_592))
    peaks = [config["split_limit"] for config in descent(levels, "memory")]
    assert peaks == [int(350_592 * f) // DESCENT_STEP * DESCENT_STEP for f in DESCENT]
    assert all(p < 350_592 and p % DESCENT_STEP == 0 for p in peaks)
    assert descent(levels, "latency") == []
    off_chip = Trial(levels.config, "PASS", metrics=Metrics(arena_bytes=350_592, arena_off_chip=True))
    assert descent(off_chip, "memory") == []
    assert descent(Trial({"split_levels": False}, "PASS", metrics=Metrics(arena_bytes=350_592)), "memory") == []


def test_memory_objective_ranks_on_chip_bytes_not_their_sum_with_the_external_spill():
    """U-Net 512: two levels configurations spill the same 18 MiB to PSRAM; 150 KB less on chip
    must win although it is within 1 % of their on-chip + external sums."""
    spill = 18_874_368
    faster = Trial({}, "PASS", metrics=Metrics(latency_us=181e6, on_chip_bytes=927_168, external_bytes=spill), index=5)
    smaller = Trial({}, "PASS", metrics=Metrics(latency_us=220e6, on_chip_bytes=779_264, external_bytes=spill), index=28)
    near = Trial({}, "PASS", metrics=Metrics(latency_us=200e6, on_chip_bytes=781_000, external_bytes=spill), index=30)
    assert best_trial([faster, smaller], "memory").index == 28          # +19 % RAM for -18 % latency: no
    assert best_trial([faster, smaller, near], "memory").index == 30    # +0.2 % RAM for -9 % latency: yes
    assert objective_key(smaller, "memory") < objective_key(faster, "memory")


def test_memory_objective_takes_a_step_that_saves_more_latency_than_it_adds_ram():
    """U-Net 256: 359 KB at 41.1 s vs the hand-like 393 KB at 36.6 s (+9.5 % RAM, -11 % latency):
    the larger one; weights copied to RAM (+540 % RAM for -86 % latency): not."""
    small = Trial({}, "PASS", metrics=Metrics(latency_us=41.1e6, on_chip_bytes=359_000), index=1)
    hand_like = Trial({}, "PASS", metrics=Metrics(latency_us=36.6e6, on_chip_bytes=393_000), index=2)
    copied = Trial({}, "PASS", metrics=Metrics(latency_us=5.7e6, on_chip_bytes=2_300_000), index=3)
    slower_bigger = Trial({}, "PASS", metrics=Metrics(latency_us=50e6, on_chip_bytes=400_000), index=4)
    assert best_trial([small, hand_like, copied, slower_bigger], "memory").index == 2
    assert best_trial([small, copied], "memory").index == 1


def test_a_weights_ram_limit_is_a_knob_on_slow_flash_and_a_move_to_it_leaves_the_flash():
    """On a target whose weights are in slow flash the space offers ``weights_ram_limit`` values,
    and a move to one from ``weights = flash`` (where the limit would not apply) copies weights:
    otherwise the search could never try a few hot weights in RAM from an incumbent in flash."""
    from mcudeploy.search.space import move
    from mcudeploy.search.strategy import Proposer
    context = SpaceContext(load_target("stm32n6"), DeploymentOptions(target="stm32n6"), weight_budgets=(4096, 65536))
    space = build_space(context)
    assert space.values["weights_ram_limit"] == (None, 4096, 65536)
    flash = normalise({**space.base_config(), "weights": "flash"})
    moved = move(flash, "weights_ram_limit", 4096)
    assert moved["weights"] == "auto" and moved["weights_ram_limit"] == 4096
    assert normalise({**flash, "weights_ram_limit": 4096})["weights_ram_limit"] is None
    neighbours = Proposer(space, "memory")._neighbours(flash)
    assert {m["weights_ram_limit"] for m in neighbours if m["weights"] == "auto"} >= {4096, 65536}
    internal = SpaceContext(load_target("stm32h743"), DeploymentOptions(target="stm32h743"))
    assert build_space(internal).values["weights_ram_limit"] == (None,)


def test_a_batch_runs_at_most_one_rewrite_of_unknown_cost():
    """The first batch proposes the levels, automatic tiling and the automatic split at once; a
    rewrite value nothing has run yet costs anything (automatic tiling of a U-Net 256: 100 s), so
    only the first of them runs in a batch, and the others wait for the next one."""
    from mcudeploy.search.strategy import REWRITES, Proposer, unmeasured_rewrite
    context = SpaceContext(load_target("stm32n6"), DeploymentOptions(target="stm32n6"), tiling=True, graph_split=True)
    space = build_space(context)
    proposer = Proposer(space, "memory")
    default = Trial(space.base_config(), "PASS", metrics=Metrics(latency_us=1e6, on_chip_bytes=100_000), index=0,
                    seconds=0.5)
    first = proposer.next_batch([default])
    rewrites = [c for c in first if any(c.get(k) for k in REWRITES)]
    assert len(rewrites) == 1 and unmeasured_rewrite(rewrites[0], [default])
    for config in first:
        proposer.mark(config)
    ran = [default] + [Trial(c, "PASS", metrics=Metrics(latency_us=1e6, on_chip_bytes=100_000), index=i + 1,
                             seconds=0.5) for i, c in enumerate(first)]
    second = proposer.next_batch(ran)
    assert sum(unmeasured_rewrite(c, ran) for c in second) == 1


def test_an_on_chip_rewrite_incumbent_is_refined_before_an_unknown_rewrite():
    from mcudeploy.search.strategy import Proposer, unmeasured_rewrite
    context = SpaceContext(load_target("stm32n6"), DeploymentOptions(target="stm32n6"), tiling=True, graph_split=True)
    space = build_space(context)
    proposer = Proposer(space, "memory")
    default = Trial(space.base_config(), "PASS", metrics=Metrics(latency_us=1e6, on_chip_bytes=100_000,
                                                                 arena_off_chip=True), index=0, seconds=0.5)
    levels = Trial(normalise({**space.base_config(), "split_levels": True}), "PASS",
                   metrics=Metrics(latency_us=2e6, on_chip_bytes=300_000), index=1, seconds=20.0)
    batch = proposer.next_batch([default, levels])
    assert batch and not any(unmeasured_rewrite(c, [default, levels]) for c in batch)
    assert any(c.get("split_levels") for c in batch)
