"""Weight placement policy: internal flash by default, RAM copies only for slow flash or on request."""
from __future__ import annotations

import pytest

from conftest import shared_model
from mcudeploy.importers import load_model
from mcudeploy.plan.ledger import build_ledger
from mcudeploy.plan.memory_plan import plan_memory
from mcudeploy.targets import load_target


def weight_regions(target_name: str, copy: bool) -> set[str]:
    graph = load_model(shared_model("mlperf_tiny/resnet8_int8.tflite"))
    target = load_target(target_name)
    plan = plan_memory(graph, target)
    ledger = build_ledger(graph, plan, target, copy_weights_to_ram=copy)
    return {line.region for line in ledger.lines if line.item == "weights"}


def test_weights_stay_in_internal_flash_by_default():
    assert weight_regions("stm32f407", copy=False) == {"FLASH"}


def test_weights_to_ram_copies_the_hot_ones_when_asked():
    regions = weight_regions("stm32f407", copy=True)
    assert regions - {"FLASH"}, "no weight was copied to on-chip RAM"


@pytest.mark.parametrize("copy", [False, True])
def test_slow_external_flash_gets_weights_copied_on_chip(copy):
    # STM32N6 has no internal flash: octoFlash on XSPI is far slower than npuRAM.
    assert weight_regions("stm32n6", copy=copy) - {"octoFlash"}


@pytest.mark.parametrize("target_name,expected", [
    ("stm32f407", "SRAM1"),      # the largest general SRAM, not the 64 KB CCM (no DMA there)
    ("stm32h743", "AXI_SRAM"),   # not ITCM / DTCM
    ("stm32n6", "npuRAM"),       # an NPU-reachable, high-bandwidth bank
])
def test_arena_region_is_the_same_for_plan_ledger_and_code(target_name, expected):
    graph = load_model(shared_model("mlperf_tiny/resnet8_int8.tflite"))
    target = load_target(target_name)
    plan = plan_memory(graph, target)
    ledger = build_ledger(graph, plan, target)
    planned = {p.region for p in plan.tensors.values()}
    ledgered = {line.region for line in ledger.lines if line.item.startswith("activations")}
    assert len(planned) == 1 and planned == ledgered
    assert planned.pop().startswith(expected)
