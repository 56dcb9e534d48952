"""The 16x8 kernel variants (int16 activations x int8 weights; kernels/s16.py,
runtime/src/dsp/*_s16_dsp.c, runtime/src/mve/*_s16_mve.c) bit for bit against the integer
reference ``run_int`` (TFLite's 16x8 arithmetic): randomized single-node cases (odd
channels, C = 1 / 3, stride 2, dilation, padding, K = 1030 past the 504-product chunk,
int64 biases far past int32, full-range int16 inputs) and a small chain whose tensors the
planner overlaps; on the host (portable definitions) and under QEMU Cortex-M4
(mps2-an386) and Cortex-M55 (mps3-an547). Also the offline weight layouts against
independent index formulas."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_cases import mismatches
from kernel_cases_s16 import case_graph_s16, chain_graph_s16, random_cases_s16
from mcudeploy.kernels.s16 import s16_quad_octets, s16_quads
from test_codegen_qemu import needs_toolchain

FAMILIES = {"dsp": ("stm32h743", "qemu-m4"), "mve": ("stm32n6", "qemu-m55")}
VARIANTS = ("conv-s16", "depthwise-s16", "fully-connected-s16", "add-s16")


def test_quads_layout():
    rows = np.arange(2 * 7, dtype=np.int8).reshape(2, 7)
    flat = s16_quads(rows)
    for r in range(2):
        for k in range(7):
            position = k if k >= 4 else [0, 2, 1, 3].index(k)
            assert flat[r * 7 + position] == rows[r, k]


def test_quad_octets_layout():
    rows = (np.arange(5 * 11) % 100 + 1).astype(np.int8).reshape(5, 11)
    flat = s16_quad_octets(rows)
    assert flat.size == 8 * 16
    for o in range(8):
        for k in range(16):
            block, r, group, i = o // 4, o % 4, k // 8, k % 8
            expected = rows[o, k] if o < 5 and k < 11 else 0
            assert flat[block * 4 * 16 + 32 * group + 8 * r + i] == expected


@pytest.mark.parametrize("family", FAMILIES)
def test_random_cases_on_the_host(family):
    graph, feeds = case_graph_s16(random_cases_s16(1, 30), 1)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    counts = deployment.kernels.counts()
    assert all(counts.get(f"{family}-{name}", 0) >= 5 for name in VARIANTS), counts


@pytest.mark.parametrize("family", FAMILIES)
def test_chain_overlapping_tensors_on_the_host(family):
    graph, feeds = chain_graph_s16(3)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()[f"{family}-conv-s16"] == 3


def test_int8_nodes_keep_their_variants():
    """The 16x8 variants refuse int8 nodes (and the int8 ones int16 nodes)."""
    from kernel_cases import case_graph, random_cases
    from mcudeploy.kernels import choose_kernels
    from mcudeploy.targets import load_target
    graph, _ = case_graph(random_cases(2, 8), 2)
    selection = choose_kernels(graph, load_target("stm32h743"))
    assert not any(choice.variant.endswith("-s16") for choice in selection.choices.values())


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("family", FAMILIES)
def test_random_cases_under_qemu(family):
    graph, feeds = case_graph_s16(random_cases_s16(4, 40), 4)
    wrong, deployment = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong
    assert sum(n for name, n in deployment.kernels.counts().items() if name.endswith("-s16")) == 40


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("family", FAMILIES)
def test_chain_under_qemu(family):
    graph, feeds = chain_graph_s16(5)
    wrong, _ = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong
