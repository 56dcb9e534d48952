"""Fast kernels at no arena cost (src/mcudeploy/plan/variant_arena.py): with kernels = arena a
fast variant stays only where the plan with it is no larger than the reference kernels' plan;
auto (the default) keeps them all while the deployment fits and states the cost. Reference: plans made here independently, with
the variants forced node by node (choose_kernels(forced=...)), and the generated code's calls."""
from __future__ import annotations

import re

import pytest

from conftest import shared_model
from mcudeploy.codegen import generate_files
from mcudeploy.driver import deploy
from mcudeploy.estimate import estimate
from mcudeploy.kernels import choose_kernels
from mcudeploy.kernels.planning_rules import planning_differences
from mcudeploy.options import DeploymentOptions
from mcudeploy.plan.memory_plan import plan_memory
from mcudeploy.targets import load_target

WAKEWORD = "mlperf_tiny/streaming_wakeword_int8.tflite"
MODELS = [WAKEWORD, "mlperf_tiny/dscnn_kws_int8.tflite", "mlperf_tiny/resnet8_int8.tflite"]


def _deployments(model: str, target: str) -> dict:
    return {kernels: deploy(shared_model(model), DeploymentOptions(target=target, kernels=kernels))
            for kernels in ("auto", "arena", "fastest", "reference")}


@pytest.mark.parametrize("target", ["stm32h743", "mps3-an547"])
@pytest.mark.parametrize("model", MODELS)
def test_kernels_arena_is_never_above_the_reference_kernels_and_auto_states_the_cost(model, target):
    runs = _deployments(model, target)
    auto, arena, fastest, reference = (runs[k].plan.arena_bytes for k in ("auto", "arena", "fastest", "reference"))
    assert arena <= reference and auto == fastest         # these all fit: auto runs every fast variant
    decision = runs["arena"].kernel_arena
    assert decision.fastest_arena == fastest and decision.plan.arena_bytes == arena
    if fastest > reference:          # the fast variants cost arena: some node fell back, named
        assert decision.reference_arena == reference and decision.fallbacks
        assert any("fell back to the reference kernel" in line for line in decision.lines())
        assert f"the fast variants cost {fastest - reference} B" in "\n".join(runs["auto"].kernel_arena.lines())


def test_each_fallback_names_the_arena_its_fast_variant_would_make():
    model, target = shared_model(WAKEWORD), load_target("mps3-an547")
    deployment = deploy(model, DeploymentOptions(target="mps3-an547", kernels="arena"))
    decision = deployment.kernel_arena
    assert decision.fallbacks, "the wakeword's 15x1 depthwise band scratch costs arena on the M55"
    kept = {name: choice.variant for name, choice in deployment.kernels.choices.items() if choice.variant != "reference"}
    for fallback in decision.fallbacks:
        choice = deployment.kernels.choices[fallback.node]
        assert choice.variant == "reference" and str(fallback.arena_with_it) in choice.reason
        # independently: the same deployment with this one node fast again, planned here
        forced = {name: "reference" for name in deployment.kernels.choices if name not in kept and name != fallback.node}
        selection = choose_kernels(deployment.graph, target, "arena", forced={**forced, **kept,
                                                                            fallback.node: fallback.variant})
        trial = plan_memory(deployment.graph, kernels=selection)
        assert trial.arena_bytes > decision.reference_arena
        assert any(rule.startswith(("scratch", "overlap")) for rule in fallback.rules)


HELIUM_CALL = re.compile(r"mcu_\w+_mve(_prechecked)?\(")   # a Helium variant's call (_prechecked: checked here)


def test_codegen_and_estimate_read_the_decided_variants():
    deployment = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels="arena"))
    network = generate_files(deployment)["network.c"]
    reference = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels="reference"))
    costs = {layer.node: layer.instructions for layer in estimate(deployment).layers}
    reference_costs = {layer.node: layer.instructions for layer in estimate(reference).layers}
    for fallback in deployment.kernel_arena.fallbacks:      # estimated as the reference kernel it runs
        assert costs[fallback.node] == reference_costs[fallback.node]
    calls = [line for line in network.splitlines() if HELIUM_CALL.search(line)]
    fast = sum(1 for c in deployment.kernels.choices.values() if c.variant.startswith("mve"))
    assert fast >= 1 and len(calls) >= fast
    fastest = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels="fastest"))
    assert len([line for line in generate_files(fastest)["network.c"].splitlines() if HELIUM_CALL.search(line)]) \
        > len(calls)


@pytest.mark.parametrize("kernels", ["auto", "fastest"])
def test_fast_variants_kept_with_their_cost_stated(kernels):
    fastest = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels=kernels))
    reference = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels="reference"))
    cost = fastest.plan.arena_bytes - reference.plan.arena_bytes
    assert cost > 0 and fastest.kernels.counts() == choose_kernels(fastest.graph, load_target("mps3-an547")).counts()
    text = "\n".join(fastest.kernel_arena.lines())
    assert f"the fast variants cost {cost} B" in text and "scratch" in text


def test_the_reference_variant_plans_like_the_reference_kernel():
    graph = deploy(shared_model(WAKEWORD), DeploymentOptions(target="mps3-an547", kernels="reference")).graph
    reference = choose_kernels(graph, load_target("mps3-an547"), "reference")
    fast = choose_kernels(graph, load_target("mps3-an547"))
    assert all(planning_differences(node, reference) == [] for node in graph.nodes)
    scratch = [node for node in graph.nodes if fast.scratch_bytes(node) > 0]
    assert scratch and all(any(r.startswith(f"scratch {fast.scratch_bytes(n)} B") for r in planning_differences(n, fast))
                           for n in scratch)


def test_an_unknown_kernel_preference_is_a_usage_error():
    from mcudeploy.errors import UsageError
    graph = deploy(shared_model(WAKEWORD), DeploymentOptions(kernels="reference")).graph
    with pytest.raises(UsageError, match="fastest"):
        choose_kernels(graph, load_target("mps3-an547"), "quickest")


@pytest.mark.parametrize("model", [WAKEWORD, "mlperf_tiny/dscnn_kws_int8.tflite", "mlperf_tiny/mobilenetv1_vww_int8.tflite"])
def test_each_depthwise_keeps_the_overlap_distance_that_packs_smaller(model):
    """mve-depthwise offers the pixel-order distance (safe on both paths) and the exact band
    distance (overlap_alternatives); the plan is never larger than with either everywhere."""
    from mcudeploy.kernels.mve import MVE_DEPTHWISE, band_overlap, depthwise_overlap
    target = load_target("stm32n6")
    deployment = deploy(shared_model(model), DeploymentOptions(target="stm32n6", kernels="fastest"))
    graph, kernels = deployment.graph, deployment.kernels
    depthwise = [n for n in graph.nodes if kernels.choices[n.name].variant == "mve-depthwise"]
    assert depthwise and MVE_DEPTHWISE.overlap_alternatives == (band_overlap,)
    fastest = choose_kernels(graph, target, "fastest")
    strict = plan_memory(graph, kernels=fastest).arena_bytes
    exact = plan_memory(graph, kernels=fastest.with_variants(
        {n.name: (MVE_DEPTHWISE.with_alternative(0), "") for n in depthwise})).arena_bytes
    assert deployment.plan.arena_bytes <= min(exact, strict)
    for node in depthwise:      # whichever rule was kept, it is one of the two safe distances
        distance = kernels.overlap_distance(node, node.inputs[0])
        assert distance in (band_overlap(node, node.inputs[0]), depthwise_overlap(node, node.inputs[0]))


def test_when_the_fast_variants_do_not_fit_only_as_many_fall_back_as_the_fit_needs():
    path = shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite")
    tight = dict(target="stm32h743", activation_region="DTCM", sram_limit=37800)   # reference 36896, fastest 38784
    fastest = deploy(path, DeploymentOptions(**tight, kernels="fastest"))
    default = deploy(path, DeploymentOptions(**tight))
    arena_first = deploy(path, DeploymentOptions(**tight, kernels="arena"))
    assert not fastest.fits and default.fits and arena_first.fits
    fallbacks = default.kernel_arena.fallbacks
    assert 0 < len(fallbacks) < len(arena_first.kernel_arena.fallbacks)
    assert default.kernel_arena.rule == "the deployment fits (kernels.variant = auto)"
    assert any("fewest" in w for w in default.warnings) and "fell back" in "\n".join(default.kernel_arena.lines())
    assert arena_first.plan.arena_bytes <= default.plan.arena_bytes <= 37800
