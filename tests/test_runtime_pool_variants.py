"""The average pool variants (runtime/src/mve/pool_mve.c: the division by the window's count
as a multiply by its reciprocal; runtime/src/dsp/pool_dsp.c) bit for bit against ``run_int``
on windows the random cases do not reach: global pools up to the 256-element limit (16x16),
padded windows (counts below the kernel's), 1 and odd channel counts, tail groups, fused
clamps, zero points at the extremes; on the host and under QEMU (Cortex-M4 / M55)."""
from __future__ import annotations

import pytest

from kernel_cases import case_graph, mismatches
from test_codegen_qemu import needs_toolchain

FAMILIES = {"dsp": ("stm32h743", "qemu-m4"), "mve": ("stm32n6", "qemu-m55")}

POOLS = [{"op": "AveragePool", "shape": shape, "kernel": kernel, "strides": strides, "pads": pads, "zero_point": zp}
         for shape, kernel, strides, pads, zp in [
             ((1, 3, 3, 256), (3, 3), (1, 1), (0, 0, 0, 0), None),      # VWW's global pool
             ((1, 16, 16, 9), (16, 16), (1, 1), (0, 0, 0, 0), "low"),   # 256 elements
             ((1, 16, 16, 3), (16, 16), (1, 1), (0, 0, 0, 0), "high"),
             ((1, 8, 8, 64), (8, 8), (1, 1), (0, 0, 0, 0), None),
             ((1, 7, 6, 17), (3, 3), (2, 2), (1, 1, 0, 0), "low"),      # padded windows: counts 4, 6, 9
             ((1, 5, 9, 1), (5, 5), (1, 2), (2, 2, 0, 0), "high"),
             ((1, 4, 4, 33), (2, 3), (1, 1), (1, 1, 0, 0), None),
             ((1, 1, 1, 40), (1, 1), (1, 1), (0, 0, 0, 0), None),       # count 1
             ((1, 11, 13, 24), (11, 13), (1, 1), (0, 0, 0, 0), "low")]]   # count 143 (odd)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("family", FAMILIES)
def test_average_pool_on_the_host(family, seed):
    graph, feeds = case_graph(POOLS, seed)
    wrong, deployment = mismatches(graph, feeds, FAMILIES[family][0], "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()[f"{family}-pool"] == len(POOLS)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("family", FAMILIES)
def test_average_pool_under_qemu(family):
    graph, feeds = case_graph(POOLS, 3)
    wrong, _ = mismatches(graph, feeds, *FAMILIES[family])
    assert not wrong, wrong
