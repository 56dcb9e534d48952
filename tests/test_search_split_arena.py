"""Split arena (``[memory] split_arena``): an arena no single bank holds is spread over several
banks, tensor group by tensor group, each bank planned on its own; the plan, the ledger and
the generated code agree, and the generated code stays bit-exact."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.codegen import ProjectOptions, generate_files
from mcudeploy.deployment import check_deployment
from mcudeploy.driver import deploy
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.options import DeploymentOptions, load_options
from mcudeploy.plan.arena_banks import Bank, split_over_banks
from mcudeploy.plan.memory_plan import plan_problems

KIB = 1024
ELEMENTS = 118 * KIB // 4          # one float32 tensor of 118 KiB


def five_alive(elements: int = ELEMENTS) -> Graph:
    """x, a, b, c and s1 alive at once: 5 x 118 KiB = 590 KiB (reuse off), more than the
    512 KiB AXI SRAM of an STM32H743 while its 128 KiB DTCM / SRAM1 / SRAM2 are empty."""
    graph = Graph("five_alive")
    x = graph.add_input("x", DType.FLOAT32, (1, elements))
    a = graph.add_node("Sigmoid", [x], name="a").outputs[0]
    b = graph.add_node("Tanh", [x], name="b").outputs[0]
    c = graph.add_node("Relu", [x], name="c").outputs[0]
    s1 = graph.add_node("Add", [a, b], name="s1").outputs[0]
    s2 = graph.add_node("Add", [s1, c], name="s2").outputs[0]
    out = graph.add_node("Add", [s2, x], name="out").outputs[0]
    graph.outputs = [out]
    verify(graph)
    return graph


def options(**values) -> DeploymentOptions:
    return DeploymentOptions(target="stm32h743", reuse=False, schedule="file", **values)


def test_an_arena_no_bank_holds_is_refused_without_the_split():
    deployment = deploy(five_alive(), options())
    assert deployment.plan.arena_bytes > 512 * KIB
    assert not deployment.fits
    assert "fits no allowed region" in deployment.ledger.verdict()


def test_the_split_arena_fits_over_several_banks_and_every_record_agrees():
    deployment = deploy(five_alive(), options(split_arena=True))
    placement = deployment.plan.placement
    assert deployment.fits, deployment.ledger.verdict()
    assert len(placement.arena_banks) >= 2 and "AXI_SRAM" in placement.arena_banks
    assert check_deployment(deployment) == [] and plan_problems(deployment.plan) == []
    # every tensor lies inside its bank, and each bank's bytes are within its capacity
    for tensor in deployment.plan.tensors.values():
        assert tensor.region in placement.arena_banks
        assert tensor.offset + tensor.size <= placement.arena_banks[tensor.region]
    used = {r.region: r for r in deployment.ledger.regions}
    for bank, size in placement.arena_banks.items():
        assert used[bank].used >= size and used[bank].overflow == 0
    ledgered = {line.region: line.bytes for line in deployment.ledger.lines if line.item.startswith("activations")}
    assert ledgered == placement.arena_banks
    # five tensors of 118 KiB, packed: AXI SRAM takes four at most, another bank the rest
    assert sum(placement.arena_banks.values()) >= 5 * 118 * KIB


def test_no_split_when_one_bank_holds_the_arena():
    deployment = deploy(five_alive(ELEMENTS // 8), options(split_arena=True))     # 74 KiB: DTCM holds it
    assert deployment.fits and deployment.plan.placement.arena_banks == {}
    assert {t.region for t in deployment.plan.tensors.values()} == {"DTCM"}


def test_banks_refuse_a_tensor_larger_than_every_bank_and_say_which():
    plan = deploy(five_alive(), options()).plan
    split = split_over_banks(plan, [Bank("small", 100 * KIB), Bank("other", 100 * KIB)])
    assert not split.fits
    assert "fits no bank" in split.reason and "118" not in split.placements


def test_split_arena_option_reads_from_a_config_file(tmp_path):
    path = tmp_path / "split.toml"
    path.write_text("[memory]\nsplit_arena = true\n")
    assert load_options(path).split_arena is True
    assert "split_arena = true" in DeploymentOptions(split_arena=True).to_toml()


def test_generated_code_of_a_split_arena_is_bit_exact_on_host():
    from mcudeploy.validate.generated_code import check_generated_code, random_integer_feeds
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    deployment = deploy(model, DeploymentOptions(target="stm32h743", split_arena=True, sram_limit=24000))
    banks = deployment.plan.placement.arena_banks
    assert deployment.fits and len(banks) >= 2
    network = generate_files(deployment, ProjectOptions())["network.c"]
    for bank in banks:
        assert f".bss.mcu_arena.{bank}" in network
    try:
        check = check_generated_code(deployment, random_integer_feeds(deployment.graph, 2, 0), "host")
    except Exception as err:     # no host compiler in this environment
        pytest.skip(f"host build unavailable: {err}")
    assert check.mismatches and all(count == 0 for count in check.mismatches.values())
    assert np.isfinite(sum(banks.values()))


def test_with_external_ram_allowed_the_split_keeps_tensors_on_chip_before_psram():
    """STM32N6 capped at 200 KiB per region: no on-chip region holds 590 KiB, hyperRAM does;
    the split arena puts the five 118 KiB tensors in on-chip banks instead."""
    from mcudeploy.estimate import estimate
    whole = deploy(five_alive(), DeploymentOptions(target="stm32n6", reuse=False, schedule="file", sram_limit=200 * KIB))
    split = deploy(five_alive(), DeploymentOptions(target="stm32n6", reuse=False, schedule="file", sram_limit=200 * KIB,
                                                   split_arena=True))
    assert whole.fits and whole.plan.placement.arena_region == "hyperRAM"
    banks = split.plan.placement.arena_banks
    assert split.fits and len(banks) >= 5 and "hyperRAM" not in banks
    assert check_deployment(split) == [] and plan_problems(split.plan) == []
    assert estimate(split).latency_us < estimate(whole).latency_us
