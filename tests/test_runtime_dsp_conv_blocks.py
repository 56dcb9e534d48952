"""The DSP conv's quad and triple blocks (runtime/src/dsp/gemm_quad_dsp.c: 4 / 3 output pixels
x 1 output channel for K >= 64, plain weight rows; kernels/dsp.py: conv_block) bit for bit
against ``run_int``: a last block of 1-3 pixels, K with an odd group and an odd pair of
groups, no bias, huge "wide" biases and left shifts (the general stage), the asm channel loops
(saturating, clamped by ReLU / ReLU6), windows inside the input and at its borders, dilation,
pointwise, C % 4 != 0, and the triple where the quad's scratch exceeds the budget; on the host
(portable definitions) and under QEMU Cortex-M4 (the instructions)."""
from __future__ import annotations

import pytest

from kernel_cases import case_graph, mismatches
from test_codegen_qemu import needs_toolchain

CASES = [  # (input shape, kernel, strides, pads, dilations, out channels, extra, expected block)
    ((1, 7, 6, 16), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5, {}, 3),            # K 144, budget 1 KiB
    ((1, 9, 9, 8), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 7, {}, 4),             # K 72: odd pair, 25 px
    ((1, 6, 7, 12), (3, 3), (1, 1), (1, 0, 1, 2), (1, 1), 3, {}, 4),            # K 108: odd group
    ((1, 5, 5, 28), (2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 6, {"bias": False}, 4),
    ((1, 10, 10, 16), (3, 3), (1, 1), (1, 1, 1, 1), (2, 2), 9, {}, 3),          # dilation: taps
    ((1, 5, 7, 96), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 10, {"wide_bias": True}, 4),   # pointwise
    ((1, 8, 8, 64), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 64, {}, 3),           # ResNet-8's last
    ((1, 9, 7, 3), (5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 4, {}, 4),             # C 3, K 75, 63 px
    ((1, 6, 6, 16), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 5, {"spread": 0.001}, 3),   # left shifts
    ((1, 6, 9, 8), (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 8, {"wide_bias": True}, 4),  # all inside
]


def block_cases() -> list[dict]:
    """The cases; output zero points not at 127, where ReLU / ReLU6 would leave one value."""
    extremes = [None, "low", "high"]
    return [{"op": "Conv", "shape": shape, "kernel": kernel, "strides": strides, "pads": pads, "dilations": dilations,
             "out": out, "per_channel": index % 3 != 1, "zero_point": extremes[index % 3],
             "out_zero_point": (None, None, "low")[index % 3], **extra}
            for index, (shape, kernel, strides, pads, dilations, out, extra, _) in enumerate(CASES)]


def test_the_cases_take_the_blocks_they_name():
    from mcudeploy.kernels.dsp import conv_accepts, conv_block
    graph, _ = case_graph(block_cases(), 1)
    convs = [node for node in graph.nodes if node.op == "Conv"]
    assert all(conv_accepts(node) is None for node in convs)
    assert [conv_block(node) for node in convs] == [case[-1] for case in CASES]


@pytest.mark.parametrize("seed", [1, 2])
def test_blocks_on_the_host(seed):
    graph, feeds = case_graph(block_cases(), seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-conv"] == len(CASES)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [3, 4])
def test_blocks_under_qemu_m4(seed):
    graph, feeds = case_graph(block_cases(), seed)
    wrong, deployment = mismatches(graph, feeds, "stm32h743", "qemu-m4")
    assert not wrong, wrong
    assert deployment.kernels.counts()["dsp-conv"] == len(CASES)
