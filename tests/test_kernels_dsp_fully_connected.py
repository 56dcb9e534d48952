"""The DSP fully connected variant (runtime/src/dsp/fully_connected_dsp.c, kernels/dsp.py):
its "quad rows" weight layout (mcu_runtime_dsp.h) against an independent index formula, and
the kernel bit for bit against the integer reference ``run_int`` on the host (portable
definitions) for every block remainder (units mod 4 = 0..3), depths around the 4-byte
groups (1..9, with the zero-padded tail), several rows, and "wide" biases that take the
general requantization; under QEMU Cortex-M4 the hand-scheduled loop (slow)."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_cases import case_graph, mismatches
from mcudeploy.kernels.dsp import quad_rows
from test_codegen_qemu import needs_toolchain


def expected_quad_rows(rows: np.ndarray) -> np.ndarray:
    """Byte by byte from the header's formula: block q, group g, row i at 16 g + 4 i (+ k mod 4);
    the N mod 4 last rows paired (8 g + 4 i), an odd last one plain."""
    count, depth = rows.shape
    padded_depth = (depth + 3) // 4 * 4
    flat = np.zeros(count * padded_depth, np.int8)
    quads = count // 4 * 4
    for unit in range(count):
        for k in range(depth):
            group, lane = divmod(k, 4)
            if unit < quads:
                index = (unit // 4) * 4 * padded_depth + 16 * group + 4 * (unit % 4) + lane
            elif count - unit == 1 and (count - quads) % 2:
                index = unit * padded_depth + 4 * group + lane
            else:
                index = quads * padded_depth + 8 * group + 4 * ((unit - quads) % 2) + lane
            flat[index] = rows[unit, k]
    return flat


@pytest.mark.parametrize("units", [1, 2, 3, 4, 5, 6, 7, 9])
@pytest.mark.parametrize("depth", [1, 4, 6, 13])
def test_quad_rows_layout(units, depth):
    rows = np.random.default_rng(units * 31 + depth).integers(-128, 128, (units, depth)).astype(np.int8)
    assert np.array_equal(quad_rows(rows), expected_quad_rows(rows))


def fc_cases() -> list[dict]:
    cases = []
    for index, (units, depth) in enumerate((u, d) for u in (1, 2, 3, 4, 5, 6, 7, 8, 12) for d in (1, 3, 4, 5, 8, 9)):
        cases.append({"op": "Gemm", "shape": (1 + index % 3, depth), "out": units,
                      "zero_point": [None, "low", "high"][index % 3], "wide_bias": index % 4 == 1})
    return cases


def test_every_block_remainder_on_the_host():
    graph, feeds = case_graph(fc_cases(), 5)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-fully-connected"] == len(fc_cases())


@pytest.mark.slow
@needs_toolchain
def test_every_block_remainder_under_qemu():
    graph, feeds = case_graph(fc_cases(), 6)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "qemu-m4")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-fully-connected"] == len(fc_cases())


def test_entry_point_chosen_at_generation_time():
    """Every unit simple: the generated call is mcu_fully_connected_s8_dsp_simple (no checks in
    C); a huge bias (a wide unit) or a left shift: _dsp_prechecked, which decides per unit."""
    from mcudeploy.codegen import ProjectOptions, generate_files
    from mcudeploy.driver import deploy
    from mcudeploy.kernels.dsp import fc_function_suffix
    from mcudeploy.options import DeploymentOptions
    cases = [{"op": "Gemm", "shape": (1, 16), "out": 2},
             {"op": "Gemm", "shape": (1, 16), "out": 3, "wide_bias": True}]
    graph, _ = case_graph(cases, 3)
    assert [fc_function_suffix(node) for node in graph.nodes] == ["_dsp_simple", "_dsp_prechecked"]
    deployment = deploy(graph, DeploymentOptions(target="stm32h743", kernels="fastest"))
    network = next(text for name, text in generate_files(deployment, ProjectOptions()).items()
                   if str(name).endswith("network.c"))
    assert network.count("mcu_fully_connected_s8_dsp_simple(") == 1
    assert network.count("mcu_fully_connected_s8_dsp_prechecked(") == 1
