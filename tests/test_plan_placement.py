"""Region placement, decided once per deployment: the arena in the fastest region that holds
it, weights in internal flash unless it is slow or the user asks, the user's reserve never
used, and the plan, the ledger and the generated code reading the same regions."""
from __future__ import annotations

import pytest

from conftest import shared_model
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.estimate import estimate
from mcudeploy.options import DeploymentOptions

RESNET8 = "mlperf_tiny/resnet8_int8.tflite"


def deployment_of(target: str, model: str = RESNET8, **options):
    return deploy(shared_model(model), DeploymentOptions(target=target, **options))


def weight_regions(target_name: str, weights: str = "auto") -> set[str]:
    ledger = deployment_of(target_name, weights=weights).ledger
    return {line.region for line in ledger.lines if line.item == "weights" and line.bytes}


def test_weights_stay_in_internal_flash_by_default():
    assert weight_regions("stm32f407") == {"FLASH"}


def test_weights_to_ram_copies_the_hot_ones_when_asked():
    assert weight_regions("stm32f407", weights="ram") - {"FLASH"}, "no weight was copied to on-chip RAM"


def test_slow_external_flash_gets_weights_copied_on_chip_unless_pinned():
    # STM32N6 has no internal flash: octoFlash on XSPI is far slower than npuRAM.
    assert weight_regions("stm32n6") - {"octoFlash"}
    assert weight_regions("stm32n6", weights="flash") == {"octoFlash"}


@pytest.mark.parametrize("target_name,expected", [
    ("stm32f407", "SRAM1"),      # CCM is as fast but smaller; SRAM1 holds it with more room
    ("stm32h743", "DTCM"),       # the fastest bank that holds 33 KB; ITCM is kept for code
    ("stm32n6", "npuRAM"),       # an NPU-reachable, high-bandwidth bank
])
def test_arena_goes_to_the_fastest_region_and_everyone_agrees(target_name, expected):
    deployment = deployment_of(target_name)
    assert check_deployment(deployment) == []
    planned = {p.region for p in deployment.plan.tensors.values()}
    ledgered = {line.region for line in deployment.ledger.lines if line.item.startswith("activations")}
    assert len(planned) == 1 and planned == ledgered
    assert planned.pop().startswith(expected)
    network = generate_files(deployment, ProjectOptions())["network.c"]
    region = deployment.plan.placement.arena_region
    assert f".bss.mcu_arena.{region}" in network and f"activation arena larger than {region}" in network


def test_a_larger_arena_falls_back_to_the_next_fastest_region():
    small_dtcm = deployment_of("stm32h743", reserve_regions=("DTCM",))
    assert small_dtcm.plan.placement.arena_region == "AXI_SRAM"
    assert all(line.region != "DTCM" for line in small_dtcm.ledger.lines if line.bytes)


def test_sram_limit_and_reserve_are_charged_and_never_used():
    deployment = deployment_of("stm32f407", reserve=100 * 1024)
    home = deployment.plan.placement.home_region
    reserve = next(line for line in deployment.ledger.lines if line.item == "application reserve")
    assert reserve.region == home and reserve.bytes == 100 * 1024
    assert deployment.plan.placement.arena_region != home or deployment.fits


def test_unknown_reserved_region_is_named():
    with pytest.raises(UsageError, match="reserve_regions: NOPE not a region of target 'stm32h743'"):
        deployment_of("stm32h743", reserve_regions=("NOPE",))


def test_arena_lands_off_chip_only_when_nothing_on_chip_holds_it_and_the_verdict_says_so():
    deployment = deployment_of("npu-mcu", sram_limit=16 * 1024)
    placement = deployment.plan.placement
    assert deployment.target.region(placement.arena_region).kind == "psram"
    assert deployment.fits and "OFF CHIP" in deployment.ledger.verdict()
    on_chip_only = deployment_of("npu-mcu", sram_limit=16 * 1024, external_activations=False)
    assert not on_chip_only.fits and "does not fit" in on_chip_only.ledger.verdict()


def _copied(deployment) -> dict[str, int]:
    """Weight tensor -> compiled bytes, for the weights the plan copied out of octoFlash."""
    from mcudeploy.driver import integer_params
    from mcudeploy.kernels.emitted_arrays import stored_sizes
    sizes = stored_sizes(deployment.graph, deployment.kernels, integer_params(deployment.graph))
    return {name: sizes.get(name, 0) for name, region in deployment.plan.weights.items() if region != "octoFlash"}


@pytest.mark.parametrize("model", [RESNET8, "mlperf_tiny/mobilenetv1_vww_int8.tflite"])
@pytest.mark.parametrize("limit_of", [lambda sizes: 0, lambda sizes: min(sizes),
                                      lambda sizes: sum(sizes) - 1], ids=["zero", "smallest", "all-but-one-byte"])
def test_a_weights_ram_limit_copies_the_most_read_weights_within_it(model, limit_of):
    """[weights] ram_limit: the copies take at most that much on-chip RAM, the most-read first
    (a greedy knapsack: a tensor that does not fit what is left stays in flash and smaller,
    less-read ones may still go). Filters the M55's 32 KB D-cache holds come last: the
    estimator charges them one read, a copy gains nothing."""
    from mcudeploy.plan.placement import weight_reads
    unlimited = _copied(deployment_of("stm32n6", model))
    limit = limit_of(list(unlimited.values()))
    deployment = deployment_of("stm32n6", model, weights_ram_limit=limit)
    copied = _copied(deployment)
    assert sum(copied.values()) <= limit and set(copied) <= set(unlimited)
    if limit < sum(unlimited.values()):
        assert set(copied) < set(unlimited)
    reads = {}
    for node in deployment.graph.nodes:
        for value in node.inputs:
            if value is not None and value.is_constant:
                reads[value.name] = reads.get(value.name, 0) + weight_reads(node)
    left = limit - sum(copied.values())
    for name in set(unlimited) - set(copied):      # each one left in flash: it did not fit what was left
        hotter = [other for other in copied if reads[other] >= reads[name]]
        assert unlimited[name] > left or not hotter or limit == 0, name
    if limit >= min(unlimited.values()):
        assert copied, "nothing copied within a limit that holds the smallest hot weights"
    assert f"ram_limit {limit} bytes" in deployment.plan.placement.reasons["weights"]
    cached = [name for name in copied if unlimited[name] <= 32 * 1024]
    streamed = [name for name in set(unlimited) - set(copied) if unlimited[name] > 32 * 1024]
    if cached and streamed:        # a filter the D-cache holds was copied only into what the streamed ones left
        assert min(unlimited[name] for name in streamed) > limit - sum(copied.values()) + sum(
            unlimited[name] for name in cached), "a weight the D-cache holds went before a streamed one"
    latency = [estimate(d).latency_us for d in (deployment_of("stm32n6", model, weights="flash"), deployment,
                                                deployment_of("stm32n6", model))]
    assert latency[0] >= latency[1] >= latency[2]


def test_hot_weight_budgets_are_increasing_prefixes_of_the_traffic():
    from mcudeploy.driver import deployable_graph, load_graph
    from mcudeploy.plan.placement import hot_weight_budgets
    from mcudeploy.targets import load_target
    graph = deployable_graph(load_graph(shared_model(RESNET8)))
    budgets = hot_weight_budgets(graph, load_target("stm32n6"))
    total = sum(v.nbytes for v in graph.constants())
    assert budgets == tuple(sorted(set(budgets))) and 1 <= len(budgets) <= 3
    assert all(b % 1024 == 0 and 0 < b <= total + 1024 for b in budgets)


def test_a_weights_ram_limit_from_the_config_file_and_the_command_line(tmp_path):
    from mcudeploy.options import load_options
    path = tmp_path / "c.toml"
    path.write_text('[weights]\nram_limit = "64K"\n', encoding="utf-8")
    assert load_options(path).weights_ram_limit == 65536
    assert "ram_limit = 65536" in load_options(path).to_toml()
    path.write_text('[weights]\nram_limit = "lots"\n', encoding="utf-8")
    with pytest.raises(UsageError, match="ram_limit"):
        load_options(path)
