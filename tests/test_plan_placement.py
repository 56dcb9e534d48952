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
