"""The 16x8 kernel variants (int16 activations x int8 weights; kernels/s16.py,
runtime/src/dsp/*_s16_dsp.c, runtime/src/mve/*_s16_mve.c) bit for bit against the integer
reference ``run_int`` (TFLite's 16x8 arithmetic): randomized single-node cases (odd
channels, C = 1 / 3, stride 2, dilation, padding, K = 1030 past the 504-product chunk,
int64 biases far past int32, full-range int16 inputs) and a small chain whose tensors the
planner overlaps; on the host (portable definitions) and under QEMU Cortex-M4
(mps2-an386) and Cortex-M55 (mps3-an547). Also the offline weight layouts against
independent index formulas."""
from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest

from conftest import REPO
from kernel_cases import mismatches
from kernel_cases_s16 import case_graph_s16, chain_graph_s16, random_cases_s16
from mcudeploy.kernels.s16 import s16_quad_octets, s16_quad_pairs, s16_quads
from test_codegen_qemu import needs_toolchain

sys.path.insert(0, str(REPO / "runtime" / "tests"))
import mcu_ctypes  # noqa: E402
from mcu_ctypes import Activation, AddQuant, Dims, ElementwiseParams, FcParams, FcQuant, Runtime  # noqa: E402

FAMILIES = {"dsp": ("stm32h743", "qemu-m4"), "mve": ("stm32n6", "qemu-m55")}
VARIANTS = ("conv-s16", "depthwise-s16", "fully-connected-s16", "add-s16")


def test_quads_layout():
    rows = np.arange(2 * 7, dtype=np.int8).reshape(2, 7)
    flat = s16_quads(rows)
    for r in range(2):
        for k in range(7):
            position = k if k >= 4 else [0, 2, 1, 3].index(k)
            assert flat[r * 7 + position] == rows[r, k]


@pytest.mark.parametrize("count", [4, 5])
def test_quad_pairs_layout(count):
    rows = (np.arange(count * 7) % 120).astype(np.int8).reshape(count, 7)
    flat, quads = s16_quad_pairs(rows), s16_quads(rows).reshape(count, 7)
    assert flat.size == count * 7
    for o in range(count):
        base = o // 2 * 14
        for k in range(7):
            if o == count - 1 and count % 2:
                position = base + k
            elif k < 4:
                position = base + 8 * (k // 4) + 4 * (o % 2) + k % 4
            else:
                position = base + 8 + 3 * (o % 2) + (k - 4)
            assert flat[position] == quads[o, k]


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


# -- the Add's arithmetic paths with hand-made parameters (ctypes, the portable C) ---------------
@pytest.fixture(scope="module")
def variant_library(tmp_path_factory) -> Runtime:
    if shutil.which("gcc") is None:
        pytest.skip("host gcc not found")
    return Runtime(mcu_ctypes.build_library(tmp_path_factory.mktemp("s16") / "libmcu_s16.so", variants=True))


@pytest.mark.parametrize("multipliers", [(2**31 - 1, 2**31 - 1, 2**31 - 1), (1 << 30, 1 << 29, 1518500250),
                                         (2**31 - 1, 12345, 2**30 + 7)])
@pytest.mark.parametrize("shifts", [(0, 0, -15), (-3, -1, -12), (0, -2, -31), (-1, 0, -40)])
@pytest.mark.parametrize("family", FAMILIES)
def test_add_against_the_reference_kernel(variant_library, family, multipliers, shifts):
    """Multipliers and shifts TFLite never makes (a + b past 2^30, shifts past 31): the wide
    paths and the fall-back must still equal mcu_add_s16."""
    rng = np.random.default_rng(sum(multipliers) % 1000 + 7 * sum(shifts))
    first, second = (rng.integers(-32768, 32768, 61).astype(np.int16) for _ in range(2))
    first[:4], second[:4] = [-32768, 32767, -32768, 0], [-32768, 32767, 32767, -1]
    quant = AddQuant(15, 0, 0, 0, multipliers[0], shifts[0], multipliers[1], shifts[1], multipliers[2], shifts[2])
    params = ElementwiseParams(activation=Activation(-32768, 32767))
    dims = Dims(1, 1, 61, 1)
    expected, actual = np.zeros(61, np.int16), np.zeros(61, np.int16)
    variant_library.call("mcu_add_s16", None, params, quant, dims, first, dims, second, dims, expected)
    variant_library.call(f"mcu_add_s16_{family}", None, params, quant, dims, first, dims, second, dims, actual)
    assert np.array_equal(expected, actual)
    if shifts[2] > -20:    # not shifted to (almost) nothing: the values are informative
        assert np.unique(expected).size > 10


@pytest.mark.parametrize("depth", [5, 16, 509, 1030])
@pytest.mark.parametrize("family", FAMILIES)
def test_fully_connected_output_stage_against_the_reference_kernel(variant_library, family, depth):
    """Every shift of the 16x8 form ([-31, 7]: total shifts 8..46, both halves of the written-out
    64-bit shift), multipliers up to 2^31 - 1 (the 0x7FFF clamp), int64 biases up to 2^47, K
    across the 504-product chunks: the variant's output stage equals mcu_fully_connected_s16."""
    rng = np.random.default_rng(depth)
    rows, units = 3, 39
    x = rng.integers(-32768, 32768, (rows, depth)).astype(np.int16)
    x[0] = -32768
    weights = rng.integers(-128, 128, (units, depth)).astype(np.int8)
    weights[0] = -128
    bias = rng.integers(-2**47, 2**47, units).astype(np.int64)
    bias[1::3] = rng.integers(-2**20, 2**20, bias[1::3].size)
    multiplier = rng.integers(2**30, 2**31, units).astype(np.int32)
    multiplier[:3] = [2**31 - 1, 0x7FFF0000, 0x7FFEFFFF]
    shift = rng.integers(-31, 8, units).astype(np.int32)
    shift[:4] = [-31, -17, -16, 7]
    quant = FcQuant(0, 0, 0, mcu_ctypes.int_pointer(multiplier), mcu_ctypes.int_pointer(shift))
    params = FcParams(activation=Activation(-32768, 32767))
    in_dims, w_dims, out_dims = Dims(rows, 1, 1, depth), Dims(units, 1, 1, depth), Dims(rows, 1, 1, units)
    prepared = s16_quad_pairs(weights) if family == "dsp" else s16_quad_octets(weights)
    expected, actual = np.zeros((rows, units), np.int16), np.zeros((rows, units), np.int16)
    variant_library.call("mcu_fully_connected_s16", None, params, quant, in_dims, x, w_dims, weights, bias,
                         out_dims, expected)
    variant_library.call(f"mcu_fully_connected_s16_{family}", None, params, quant, in_dims, x, w_dims,
                         np.ascontiguousarray(prepared), bias, out_dims, actual)
    assert np.array_equal(expected, actual)
    assert np.unique(expected).size > 20


@pytest.mark.parametrize("kind", ["conv 3x3", "pointwise", "depthwise"])
@pytest.mark.parametrize("family", FAMILIES)
def test_conv_writes_a_strided_output(variant_library, family, kind):
    """Out c_stride (kernels/strided_output.py lists the 16x8 conv / depthwise variants): the
    variant writes the reference's dense output into its channel slice and nothing else."""
    rng = np.random.default_rng(len(kind))
    channels, out_channels, kernel = 6, (6 if kind == "depthwise" else 5), (1 if kind == "pointwise" else 3)
    x = rng.integers(-32768, 32768, (1, 7, 6, channels)).astype(np.int16)
    per_filter = 1 if kind == "depthwise" else channels
    weights = rng.integers(-128, 128, (out_channels, kernel, kernel, per_filter)).astype(np.int8)
    bias = rng.integers(-2**22, 2**22, out_channels).astype(np.int64)
    multiplier = rng.integers(2**30, 2**31, out_channels).astype(np.int32)
    shift = np.full(out_channels, -14, np.int32)
    quant = mcu_ctypes.ChannelQuant(0, 0, mcu_ctypes.int_pointer(multiplier), mcu_ctypes.int_pointer(shift))
    pad = 0 if kind == "pointwise" else 1
    activation = Activation(-32768, 32767)
    out_h, out_w = 7, 6
    in_dims, w_dims = Dims(1, 7, 6, channels), Dims(out_channels, kernel, kernel, per_filter)
    rows = weights.reshape(out_channels, -1)
    if kind == "depthwise":
        params = mcu_ctypes.DepthwiseParams(1, 1, pad, pad, 1, 1, 1, activation)
        prepared = s16_quads(np.ascontiguousarray(rows.T)) if family == "dsp" else rows.T.reshape(-1)
        function = "mcu_depthwise_conv2d_s16"
    else:
        params = mcu_ctypes.ConvParams(1, 1, pad, pad, 1, 1, activation)
        prepared = s16_quad_pairs(rows) if family == "dsp" else s16_quad_octets(rows)
        function = "mcu_conv2d_s16"
    dense = np.zeros((1, out_h, out_w, out_channels), np.int16)
    variant_library.call(function, None, params, quant, in_dims, x, w_dims, weights, bias,
                         Dims(1, out_h, out_w, out_channels), dense)
    wide = np.full((1, out_h, out_w, out_channels + 7), 12345, np.int16)
    scratch = np.zeros(4096, np.uint8)
    context = mcu_ctypes.Context(scratch.ctypes.data, scratch.size)
    variant_library.call(f"{function}_{family}", context, params, quant, in_dims, x, w_dims,
                         np.ascontiguousarray(prepared, dtype=np.int8), bias,
                         Dims(1, out_h, out_w, out_channels, out_channels + 7), wide[..., 2:])
    assert np.array_equal(wide[..., 2:2 + out_channels], dense)
    assert np.all(wide[..., :2] == 12345) and np.all(wide[..., 2 + out_channels:] == 12345)
    assert np.unique(dense).size > 20
