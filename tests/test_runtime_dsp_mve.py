"""The optimised kernel variants -- DSP extension (runtime/src/dsp, kernels/dsp.py; target
stm32h743) and Helium (runtime/src/mve, kernels/mve.py; target stm32n6) -- bit for bit
against the integer reference ``run_int``: randomized single-node cases (odd channel counts,
1 and 3 input channels, stride 2, dilation, padding, zero points at the extremes, per-tensor
and per-channel weights, huge "wide" biases) as one graph of independent branches, and a
small sequential network whose tensors the planner overlaps. On the host the variants
compile to their portable definitions (src/dsp/mcu_dsp_simd.h, src/mve/mcu_mve_simd.h); under
QEMU Cortex-M4 (mps2-an386) and Cortex-M55 (mps3-an547) to the instructions themselves."""
from __future__ import annotations

import pytest

from kernel_cases import case_graph, chain_graph, mismatches, random_cases
from test_codegen_qemu import needs_toolchain

FAMILIES = {"dsp": ("stm32h743", "qemu-m4"), "mve": ("stm32n6", "qemu-m55")}


@pytest.mark.parametrize("family", FAMILIES)
def test_random_cases_on_the_host(family):
    graph, feeds = case_graph(random_cases(1, 40), 1)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    assert sum(count for name, count in deployment.kernels.counts().items() if name.startswith(family)) >= 32


@pytest.mark.parametrize("family", FAMILIES)
def test_chain_overlapping_tensors_on_the_host(family):
    graph, feeds = chain_graph(3)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()[f"{family}-conv"] == 3


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("family", FAMILIES)
def test_random_cases_under_qemu(family, seed):
    graph, feeds = case_graph(random_cases(seed, 96), seed)
    wrong, _ = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("family", FAMILIES)
def test_chain_under_qemu(family):
    graph, feeds = chain_graph(5)
    wrong, _ = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong


def small_depth_cases() -> list[dict]:
    """Every K in 1..17 for the fully connected and the pointwise conv, with 1-3 outputs (the
    remainder block alone: mcu_mve_gemm_few) and 4-5 (a whole block and a tail), one and two
    rows / pixels (the single and the paired column), zero points at the extremes."""
    cases = []
    for depth in range(1, 18):
        units = (1, 2, 3, 5)[depth % 4]
        rows = 1 + depth % 3
        extreme = (None, "low", "high")[depth % 3]
        cases.append({"op": "Gemm", "shape": (rows, depth), "out": units, "zero_point": extreme})
        cases.append({"op": "Conv", "shape": (1, 1 + depth % 2, 1 + depth % 3, depth), "kernel": (1, 1),
                      "out": (1, 2, 3, 4)[(depth + 1) % 4], "zero_point": extreme})
    return cases


@pytest.mark.parametrize("family", FAMILIES)
def test_small_depths_and_few_outputs_on_the_host(family):
    graph, feeds = case_graph(small_depth_cases(), 7)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    assert sum(count for name, count in deployment.kernels.counts().items() if name.startswith(family)) >= 30


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("family", FAMILIES)
def test_small_depths_and_few_outputs_under_qemu(family):
    graph, feeds = case_graph(small_depth_cases(), 8)
    wrong, _ = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong
