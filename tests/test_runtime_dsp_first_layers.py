"""The DSP conv's small-C fields (runtime/src/dsp/conv_dsp.c, C % 4 != 0: the first layers,
C = 1 / 3) bit for bit against ``run_int``: kernel rows inside the input copied as runs of
kW*C bytes (word copies, the K..Kp tail set to the zero point first), the tap-by-tap gather at
the left / right borders, rows in the padding, stride 2, dilation along H (runs) and W (taps),
K = kH*kW*C from 1 to 40 (every K mod 4), zero points at the extremes; on the host (portable
definitions) and under QEMU Cortex-M4 (the instructions)."""
from __future__ import annotations

import pytest

from kernel_cases import case_graph, mismatches
from test_codegen_qemu import needs_toolchain

SHAPES = [  # (input shape, kernel, strides, pads, dilations, out channels)
    ((1, 13, 12, 3), (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 8),      # MobileNet's first conv
    ((1, 12, 11, 3), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5),
    ((1, 15, 10, 1), (10, 4), (2, 2), (4, 1, 5, 2), (1, 1), 16),     # DS-CNN's first conv
    ((1, 11, 9, 1), (3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 8),        # person detection's
    ((1, 9, 9, 1), (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 3),         # K = 1
    ((1, 8, 8, 2), (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 7),         # K = 6
    ((1, 10, 9, 5), (2, 2), (1, 2), (1, 0, 0, 1), (1, 1), 4),        # K = 20
    ((1, 10, 10, 3), (3, 3), (1, 1), (2, 1, 2, 1), (2, 1), 6),       # dilation along H: runs
    ((1, 9, 11, 3), (3, 3), (1, 1), (1, 2, 1, 2), (1, 2), 6),        # dilation along W: taps
    ((1, 7, 7, 7), (2, 3), (2, 1), (1, 1, 0, 1), (1, 1), 9),         # K = 42
    ((1, 6, 5, 1), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 2),         # K = 25, most pixels at a border
]


def first_layer_cases() -> list[dict]:
    extremes = [None, "low", "high"]
    return [{"op": "Conv", "shape": shape, "kernel": kernel, "strides": strides, "pads": pads, "dilations": dilations,
             "out": out, "per_channel": index % 3 != 1, "wide_bias": index % 4 == 2, "zero_point": extremes[index % 3],
             "out_zero_point": extremes[(index + 1) % 3]}
            for index, (shape, kernel, strides, pads, dilations, out) in enumerate(SHAPES)]


@pytest.mark.parametrize("seed", [1, 2])
def test_first_layers_on_the_host(seed):
    graph, feeds = case_graph(first_layer_cases(), seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-conv"] == len(SHAPES)


@pytest.mark.slow
@needs_toolchain
def test_first_layers_under_qemu_m4():
    graph, feeds = case_graph(first_layer_cases(), 3)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "qemu-m4")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-conv"] == len(SHAPES)
