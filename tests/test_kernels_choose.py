"""The optimised kernel variants in the catalogue (src/mcudeploy/kernels/dsp.py, mve.py): which
variant every built-in target picks and why others are refused, the offline weight layouts
against their definitions in the headers (runtime/include/mcu_runtime_dsp.h, _mve.h), the
folded bias, the scratch sizes the C functions report, and the blocked-overlap proofs
against a brute-force simulation of the kernels' access order. No toolchain needed."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_cases import case_graph, chain_graph
from mcudeploy.driver import deploy
from mcudeploy.kernels import choose_kernels
from mcudeploy.kernels.dsp import depthwise_groups, paired_rows
from mcudeploy.kernels.mve import _pointwise_in_place, quad_rows
from mcudeploy.kernels.overlap import window_distance
from mcudeploy.kernels.overlap_blocked import blocked_window_distance
from mcudeploy.kernels.prepared import folded_bias, prepared_params, weight_rows
from mcudeploy.options import DeploymentOptions
from mcudeploy.targets import load_target

CASES = [{"op": "Conv", "shape": (1, 6, 6, 8), "kernel": (3, 3), "out": 8, "pads": (1, 1, 1, 1)},
         {"op": "Conv", "shape": (1, 6, 6, 8), "kernel": (3, 3), "group": 8, "out": 8},
         {"op": "Conv", "shape": (1, 6, 6, 4), "kernel": (3, 3), "group": 4, "multiplier": 2, "out": 8},
         {"op": "Conv", "shape": (1, 6, 6, 8), "kernel": (3, 3), "group": 2, "out": 4},
         {"op": "Gemm", "shape": (1, 40), "out": 10},
         {"op": "Add", "shape": (1, 4, 4, 8)},
         {"op": "MaxPool", "shape": (1, 4, 4, 8), "kernel": (2, 2)}]
EXPECTED = {  # case index -> variant per core family
    "dsp": ["dsp-conv", "dsp-depthwise", "reference", "reference", "dsp-fully-connected", "dsp-elementwise",
            "dsp-pool"],
    "mve": ["mve-conv", "mve-depthwise", "reference", "reference", "mve-fully-connected", "mve-elementwise",
            "mve-pool"],
    "none": ["reference"] * 7,
}
TARGETS = {"stm32l4r5": "dsp", "stm32f407": "dsp", "stm32f767": "dsp", "stm32h743": "dsp", "stm32u585": "dsp",
           "stm32n6": "mve", "stm32f103": "none"}


@pytest.mark.parametrize("target", TARGETS)
def test_every_builtin_target_picks_its_core_variants(target):
    graph, _ = case_graph(CASES)
    selection = choose_kernels(graph, load_target(target))
    chosen = [selection.choices[value.producer.name].variant for value in graph.outputs]
    assert chosen == EXPECTED[TARGETS[target]]


def test_refusals_name_the_reason_and_reference_preference_wins():
    graph, _ = case_graph(CASES)
    selection = choose_kernels(graph, load_target("stm32n6"))
    reasons = {value.producer.name: selection.choices[value.producer.name].reason for value in graph.outputs}
    assert "depth multiplier 2" in reasons["conv2"] and "group 2" in reasons["conv3"]
    assert "needs the DSP extension" in choose_kernels(graph, load_target("stm32f103")).choices["conv0"].reason
    reference = choose_kernels(graph, load_target("stm32n6"), "reference")
    assert set(reference.counts()) == {"reference"}


def test_broadcast_int16_and_sub_stay_on_the_reference():
    from kernel_cases import q
    from mcudeploy.ir import DType, Graph
    graph = Graph("misc")
    a = graph.add_input("a", DType.INT8, (1, 4, 4, 8), quant=q(0.1, 0))
    b = graph.add_input("b", DType.INT8, (1, 1, 1, 8), quant=q(0.1, 0))
    add = graph.add_node("Add", [a, b], {}, name="broadcast")
    add.outputs[0].quant = q(0.2, 0)
    sub = graph.add_node("Sub", [a, a], {}, name="sub")
    sub.outputs[0].quant = q(0.2, 0)
    graph.outputs = [add.outputs[0], sub.outputs[0]]
    selection = choose_kernels(graph, load_target("stm32h743"))
    assert selection.choices["broadcast"].variant == "reference"
    assert "broadcast" in selection.choices["broadcast"].reason
    assert selection.choices["sub"].variant == "reference"


def test_paired_rows_layout():
    rows = np.arange(5 * 6, dtype=np.int8).reshape(5, 6)   # K = 6 -> Kp = 8, O = 5 (one odd row)
    flat = paired_rows(rows)
    padded = np.zeros((5, 8), np.int8)
    padded[:, :6] = rows
    assert flat.size == 5 * 8
    for q in range(2):
        pair = flat[16 * q:16 * (q + 1)]
        for g in range(2):
            assert np.array_equal(pair[8 * g:8 * g + 4], padded[2 * q, 4 * g:4 * g + 4])
            assert np.array_equal(pair[8 * g + 4:8 * g + 8], padded[2 * q + 1, 4 * g:4 * g + 4])
    assert np.array_equal(flat[32:], padded[4])


def test_quad_rows_layout():
    rows = np.random.default_rng(0).integers(-128, 128, (6, 20)).astype(np.int8)   # Kp = 32, blocks 4 + 2
    flat = quad_rows(rows)
    padded = np.zeros((6, 32), np.int8)
    padded[:, :20] = rows
    assert flat.size == 6 * 32
    for o in range(6):
        block, r, count = o // 4, o % 4, 4 if o < 4 else 2
        for g in range(2):
            start = 4 * block * 32 + (g * count + r) * 16
            assert np.array_equal(flat[start:start + 16], padded[o, 16 * g:16 * g + 16])


def test_depthwise_groups_layout():
    weights = np.arange(6 * 3 * 3, dtype=np.int8).reshape(6, 3, 3, 1)   # 1 group of 4 + 2 tail channels
    flat = depthwise_groups(weights)
    taps = weights.reshape(6, 9)
    assert flat.size == 54
    for t in range(9):
        assert np.array_equal(flat[4 * t:4 * t + 4], taps[:4, t])
        assert np.array_equal(flat[36 + 2 * t:36 + 2 * t + 2], taps[4:, t])


def test_folded_bias_is_exact_modulo_two_to_the_32():
    graph, _ = case_graph([{"op": "Conv", "shape": (1, 5, 5, 3), "kernel": (3, 3), "out": 4, "wide_bias": True,
                            "zero_point": "high"}])
    node = graph.nodes[0]
    params, rows = prepared_params(node), weight_rows(node)
    folded = folded_bias(node, params.input_offset, rows).astype(np.int64)
    exact = node.input(2).const.astype(np.int64) + params.input_offset * rows.astype(np.int64).sum(axis=1)
    assert np.array_equal((folded - exact) % 2**32, np.zeros(4))


def test_prepared_constants_keep_the_graph_byte_counts_except_padding():
    graph, _ = chain_graph()
    for target in ("stm32h743", "stm32n6"):
        deployment = deploy(graph, DeploymentOptions(target=target))
        for node in deployment.graph.nodes:
            variant = deployment.kernels.variant(node)
            if variant.prepare_constants is None:
                continue
            arrays = variant.prepare_constants(node, deployment.params[node.name])
            weights = node.inputs[1]
            depth = int(np.prod(weights.shape[1:]))
            if variant.name == "mve-depthwise":   # [G][taps][8] weights, [G][24] bias / scale words
                groups = -(-weights.shape[0] // 8)
                assert arrays[1].size == groups * 8 * depth and arrays[1].dtype == np.int8, node.name
                assert arrays[2].size == groups * 24 and arrays[2].dtype == np.int32, node.name
                continue
            padded = depth if node.op == "Conv" and weights.shape[3] == 1 and node.attrs["group"] > 1 else (
                (depth + 3) // 4 * 4 if variant.name.startswith("dsp") else (depth + 15) // 16 * 16)
            assert arrays[1].size == weights.shape[0] * padded, (target, node.name)
            assert arrays[1].dtype == np.int8
            if 2 in arrays:   # bias'; an im2col mve conv's packed with its scales (12 int32 per 4 channels)
                packed = variant.name == "mve-conv" and not _pointwise_in_place(node)
                size = 12 * -(-weights.shape[0] // 4) if packed else weights.shape[0]
                assert arrays[2].dtype == np.int32 and arrays[2].size == size, (target, node.name)


# -- overlap proofs --------------------------------------------------------------------------
def _reads(value_shape, out_shape, stride, pad, kernel):
    """Input byte indices each output pixel reads (NHWC, batch 1, int8, dilation 1)."""
    _, height, width, channels = value_shape
    _, out_h, out_w, _ = out_shape
    reads = []
    for y in range(out_h):
        for x in range(out_w):
            pixel = set()
            for i in range(kernel[0]):
                for j in range(kernel[1]):
                    row, column = y * stride[0] - pad[0] + i, x * stride[1] - pad[1] + j
                    if 0 <= row < height and 0 <= column < width:
                        pixel.update(range((row * width + column) * channels, (row * width + column + 1) * channels))
            reads.append(pixel)
    return reads


def _safe(distance, reads, out_channels, block, reads_first):
    """Simulate units of `block` pixels, the worst order the kernel allows: every read of a
    unit before its writes (reads_first) or every write of a unit before its reads."""
    last_read, time = {}, 0
    events = []
    for start in range(0, len(reads), block):
        unit = range(start, min(start + block, len(reads)))
        unit_reads = [("r", b) for p in unit for b in sorted(reads[p])]
        unit_writes = [("w", p * out_channels + c) for p in unit for c in range(out_channels)]
        events += unit_reads + unit_writes if reads_first else unit_writes + unit_reads
    for time, (kind, byte) in enumerate(events):
        if kind == "r":
            last_read[byte] = time
    for time, (kind, byte) in enumerate(events):
        if kind == "w" and last_read.get(byte - distance, -1) > time:   # output byte b = input byte b - d
            return False
    return True


@pytest.mark.parametrize("stride,pad,kernel,out_channels", [((1, 1), (1, 1), (3, 3), 4), ((2, 2), (0, 1), (3, 3), 8),
                                                             ((1, 1), (0, 0), (1, 1), 6), ((2, 1), (1, 0), (2, 3), 3)])
@pytest.mark.parametrize("block,reads_first", [(2, True), (2, False), (5, False)])
def test_blocked_overlap_distance_is_safe_and_no_looser_than_needed(stride, pad, kernel, out_channels, block,
                                                                    reads_first):
    from mcudeploy.ir import DType, Value
    height, width, channels = 6, 5, 4
    out_h = (height + 2 * pad[0] - kernel[0]) // stride[0] + 1
    out_w = (width + 2 * pad[1] - kernel[1]) // stride[1] + 1
    value = Value("x", DType.INT8, (1, height, width, channels))
    output = Value("y", DType.INT8, (1, out_h, out_w, out_channels))
    distance = blocked_window_distance(value, output, stride, pad, (1, 1), kernel, block, reads_first)
    reads = _reads(value.shape, output.shape, stride, pad, kernel)
    assert _safe(distance, reads, out_channels, block, reads_first)
    if distance > 0:
        assert not _safe(distance - 1, reads, out_channels, block, reads_first)
    if reads_first:   # reading a unit's fields first never needs more than the reference loop
        assert distance <= window_distance(value, output, stride, pad, (1, 1), kernel)
