"""The DSP depthwise kernel (runtime/src/dsp/depthwise_dsp.c, kernels/dsp.py) bit for bit
against ``run_int``: the unrolled 3x3 interior (the input offset folded into an interior
bias), the window loop at the borders and for other kernel sizes, stride 1 / 2, dilation,
asymmetric padding, C % 4 tail channels, zero points at the extremes, clamps (ReLU / ReLU6:
the bytewise SSUB8 + SEL clamp), "wide" channels (a huge bias: the general output stage);
on the host (portable definitions) and under QEMU Cortex-M4 (the instructions)."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_cases import case_graph, mismatches
from test_codegen_qemu import needs_toolchain

SHAPES = [  # (input shape, kernel, strides, pads, dilations)
    ((1, 25, 5, 64), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # DS-CNN
    ((1, 9, 9, 17), (3, 3), (2, 2), (0, 1, 1, 0), (1, 1)),
    ((1, 8, 11, 12), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    ((1, 6, 8, 8), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1)),
    ((1, 11, 10, 24), (5, 5), (2, 2), (1, 2, 2, 1), (1, 1)),
    ((1, 5, 6, 3), (3, 3), (1, 2), (1, 1, 1, 1), (1, 1)),
    ((1, 4, 4, 33), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((1, 8, 7, 16), (3, 2), (1, 1), (1, 0, 1, 1), (1, 1)),
    ((1, 3, 3, 8), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),         # one pixel, no padding
    ((1, 2, 2, 4), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),         # every pixel a border pixel
    ((1, 9, 7, 11), (3, 3), (1, 1), (2, 1, 2, 1), (2, 1)),
    ((1, 9, 9, 20), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
    ((1, 15, 1, 9), (15, 1), (1, 1), (7, 0, 7, 0), (1, 1)),       # a 1-D kernel
    ((1, 7, 7, 7), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
]


def depthwise_cases(seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    extremes = [None, "low", "high"]
    cases = []
    for index, (shape, kernel, strides, pads, dilations) in enumerate(SHAPES):
        cases.append({"op": "Conv", "shape": shape, "kernel": kernel, "strides": strides, "pads": pads,
                      "dilations": dilations, "group": shape[3], "out": shape[3],
                      "per_channel": bool(rng.random() < 0.7), "wide_bias": index % 5 == 1,
                      "bias": index % 7 != 3, "zero_point": extremes[index % 3],
                      "out_zero_point": extremes[(index + seed) % 3]})
    return cases


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_depthwise_on_the_host(seed):
    cases = depthwise_cases(seed)
    graph, feeds = case_graph(cases, seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-depthwise"] == len(cases)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [1, 2])
def test_depthwise_under_qemu_m4(seed):
    cases = depthwise_cases(seed)
    graph, feeds = case_graph(cases, seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "qemu-m4")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-depthwise"] == len(cases)


def block_cases(seed: int, count: int = 14) -> list[dict]:
    """Random 3x3 (dilation 1) shapes for the row blocks: maps of 1..9 rows / columns (2x2,
    3x3: every pixel a border pixel; 1 wide: the window loop), pads 0..2 on each side (pad 2:
    the layers the blocks refuse), stride 1 / 2, C % 4 != 0, some layers with a wide channel
    (a group that is not simple: run_row_any), zero points at the extremes."""
    rng = np.random.default_rng(seed)
    extremes = [None, "low", "high"]
    cases = []
    for index in range(count):
        height, width = int(rng.integers(1, 10)), int(rng.integers(1, 10))
        pads = tuple(int(p) for p in rng.choice([0, 1, 1, 1, 2], 4))
        strides = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        height, width = max(height, 3 - pads[0] - pads[2]), max(width, 3 - pads[1] - pads[3])
        channels = int(rng.choice([4, 5, 8, 12, 17, 32]))
        cases.append({"op": "Conv", "shape": (1, height, width, channels), "kernel": (3, 3), "strides": strides,
                      "pads": pads, "dilations": (1, 1), "group": channels, "out": channels,
                      "per_channel": bool(rng.random() < 0.7), "wide_bias": bool(rng.random() < 0.25),
                      "bias": bool(rng.random() < 0.9), "zero_point": extremes[index % 3],
                      "out_zero_point": extremes[int(rng.integers(0, 3))]})
    return cases


@pytest.mark.parametrize("seed", [11, 12])
def test_row_blocks_random_shapes_on_the_host(seed):
    cases = block_cases(seed)
    graph, feeds = case_graph(cases, seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-depthwise"] == len(cases)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [11, 13])
def test_row_blocks_random_shapes_under_qemu_m4(seed):
    cases = block_cases(seed)
    graph, feeds = case_graph(cases, seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "qemu-m4")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-depthwise"] == len(cases)
