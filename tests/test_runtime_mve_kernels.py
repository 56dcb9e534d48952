"""The Helium depthwise and pointwise kernels (runtime/src/mve/depthwise_mve.c, conv_mve.c,
kernels/mve.py) bit for bit against ``run_int``: the depthwise band path (dilation 1: ring of
input rows, pixel pairs, 3x3 unrolled, other kernel sizes looped, odd widths, stride 1 / 2, the
C % 8 tail group; passes over group chunks when the whole band is above the budget) and
pixel path (dilation 2); the pointwise conv read in
place with C % 16 != 0; on the host (portable definitions) and under QEMU Cortex-M55 (the
instructions). Also the band path's overlap against a simulation of its access order, and
the plan's (stricter, pixel-order) distance at least as large."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_model
from kernel_cases import case_graph, mismatches
from mcudeploy.driver import deploy
from mcudeploy.kernels.mve import (
    _band_fits,
    band_chunk_groups,
    band_overlap,
    depthwise_overlap,
    depthwise_scratch_bytes,
)
from mcudeploy.options import DeploymentOptions
from test_codegen_qemu import needs_toolchain


def depthwise_cases() -> list[dict]:
    cases = []
    shapes = [((1, 7, 5, 64), (3, 3), (1, 1), (1, 1, 1, 1)), ((1, 9, 9, 17), (3, 3), (2, 2), (0, 1, 1, 0)),
              ((1, 6, 8, 8), (5, 5), (1, 1), (2, 2, 2, 2)), ((1, 11, 10, 24), (5, 5), (2, 2), (1, 2, 2, 1)),
              ((1, 5, 6, 3), (3, 3), (1, 2), (1, 1, 1, 1)), ((1, 4, 4, 33), (1, 1), (1, 1), (0, 0, 0, 0)),
              ((1, 8, 7, 16), (3, 2), (1, 1), (1, 0, 1, 1)), ((1, 3, 3, 256), (3, 3), (1, 1), (1, 1, 1, 1)),
              ((1, 5, 9, 12), (7, 3), (1, 1), (3, 1, 3, 1)), ((1, 9, 8, 13), (3, 3), (2, 1), (1, 1, 1, 1))]
    extremes = [None, "low", "high"]
    for index, (shape, kernel, strides, pads) in enumerate(shapes):
        cases.append({"op": "Conv", "shape": shape, "kernel": kernel, "strides": strides, "pads": pads,
                      "group": shape[3], "out": shape[3], "per_channel": index % 3 != 2,
                      "wide_bias": index % 4 == 1, "zero_point": extremes[index % 3]})
    cases.append({"op": "Conv", "shape": (1, 9, 7, 11), "kernel": (3, 3), "dilations": (2, 1),
                  "pads": (2, 1, 2, 1), "group": 11, "out": 11})   # the pixel path
    for shape, strides, extreme in [((1, 4, 4, 333), (1, 1), "low"), ((1, 5, 5, 200), (2, 2), "high"),
                                    ((1, 2, 3, 97), (1, 1), None)]:   # band passes over group chunks
        cases.append({"op": "Conv", "shape": shape, "kernel": (3, 3), "strides": strides, "pads": (1, 1, 1, 1),
                      "group": shape[3], "out": shape[3], "zero_point": extreme, "out_zero_point": extreme})
    return cases


def test_band_or_pixel_path_and_scratch():
    graph, _ = case_graph(depthwise_cases(), 5)
    nodes = {node.name: node for node in graph.nodes}
    assert _band_fits(nodes["conv0"]) and depthwise_scratch_bytes(nodes["conv0"]) == 3 * 7 * 8 * 8
    wide = nodes["conv7"]   # 3x3x256 on a 3x3 image: the whole band is above the budget (2,304 B)
    assert not _band_fits(wide) and band_chunk_groups(wide) == 2304 // (3 * 5 * 8) == 19   # of 32 groups
    assert depthwise_scratch_bytes(wide) == 19 * 3 * 5 * 8
    assert depthwise_overlap(wide, wide.inputs[0]) >= wide.outputs[0].nbytes   # passes reread the input
    assert band_chunk_groups(nodes["conv11"]) == 5328 // 144 == 37   # 42 groups: 37 + 5 (tail)
    assert band_chunk_groups(nodes["conv12"]) == 3400 // (3 * 7 * 8) == 20   # 25 groups, stride 2
    assert band_chunk_groups(nodes["conv13"]) == 1024 // (3 * 5 * 8) == 8   # the 1 KiB floor, 13 groups
    assert depthwise_scratch_bytes(nodes["conv10"]) == 0 and band_chunk_groups(nodes["conv10"]) == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_depthwise_on_the_host(seed):
    graph, feeds = case_graph(depthwise_cases(), seed)
    wrong, deployment = mismatches(graph, feeds, "stm32n6", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["mve-depthwise"] == len(depthwise_cases())


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [1, 2])
def test_depthwise_under_qemu_m55(seed):
    graph, feeds = case_graph(depthwise_cases(), seed)
    wrong, deployment = mismatches(graph, feeds, "stm32n6", "qemu-m55")
    assert not wrong, wrong
    assert deployment.kernels.counts()["mve-depthwise"] == len(depthwise_cases())


def _simulated_distance(node) -> int:
    """The smallest safe distance from the band path's row-order access sequence: per output
    row, copy the input rows not yet in the ring of kH slots, then write the row."""
    x, y = node.inputs[0], node.outputs[0]
    _, height, width, channels = x.shape
    _, out_height, out_width, out_channels = y.shape
    kernel_h, stride, pad = node.inputs[1].shape[1], node.attrs["strides"][0], node.attrs["pads"][0]
    events, loaded = [], {}
    for row in range(out_height):
        for i in range(kernel_h):
            in_y = row * stride - pad + i
            slot = (in_y + pad) % kernel_h
            if loaded.get(slot) != in_y and 0 <= in_y < height:
                events.append(("read", in_y * width * channels))
            loaded[slot] = in_y
        events.append(("write", (row + 1) * out_width * out_channels))
    distance = 0
    for index, (kind, end) in enumerate(events):
        later = [start for k, start in events[index:] if k == "read"]
        if kind == "write" and later:
            distance = max(distance, end - min(later))
    return distance


@pytest.mark.parametrize("index", [0, 1, 2, 3, 4, 5, 6, 9])
def test_band_overlap_matches_the_access_order(index):
    graph, _ = case_graph(depthwise_cases(), 3)
    node = next(n for n in graph.nodes if n.name == f"conv{index}")
    assert _band_fits(node)
    assert band_overlap(node, node.inputs[0]) == _simulated_distance(node)
    # the plan's distance (the stricter pixel-order rule) is safe for the band path
    assert depthwise_overlap(node, node.inputs[0]) >= _simulated_distance(node)


def test_mobilenet_depthwise_layers_all_take_the_helium_kernel():
    deployment = deploy(shared_model("mlperf_tiny/mobilenetv1_vww_int8.tflite"),
                        DeploymentOptions(target="stm32n6", kernels="fastest"))   # accepted where each runs
    depthwise = [n for n in deployment.graph.nodes if n.op == "Conv" and n.attrs.get("group", 1) > 1]
    assert depthwise and all(deployment.kernels.variant(n).name == "mve-depthwise" for n in depthwise)


# -- the pointwise conv with K % 16 != 0, read in place (conv_mve.c) -------------------------
POINTWISE = [{"op": "Conv", "shape": (1, h, w, c), "kernel": (1, 1), "out": out, "zero_point": zp}
             for (h, w, c, out, zp) in [(5, 7, 8, 16, None), (3, 3, 3, 8, "low"), (4, 5, 24, 7, "high"),
                                        (1, 1, 5, 4, None), (6, 3, 17, 32, None)]]


def test_pointwise_small_depth_reads_in_place_on_the_host():
    from mcudeploy.kernels.mve import _pointwise_in_place, conv_scratch_bytes
    graph, feeds = case_graph(POINTWISE, 4)
    nodes = [n for n in graph.nodes if n.op == "Conv"]
    assert all(_pointwise_in_place(n) for n in nodes)
    assert [conv_scratch_bytes(n) for n in nodes] == [32, 32, 64, 32, 64]   # the last pair's columns
    wrong, deployment = mismatches(graph, feeds, "stm32n6", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["mve-conv"] == len(POINTWISE)


@pytest.mark.slow
@needs_toolchain
def test_pointwise_small_depth_under_qemu_m55():
    graph, feeds = case_graph(POINTWISE, 6)
    wrong, _ = mismatches(graph, feeds, "stm32n6", "qemu-m55")
    assert not wrong, wrong


# -- the im2col conv's packed scales and pair loop (conv_mve.c, gemm_mve.c) -------------------
# chunks of 16 k odd (K = 144), even (K = 288), two (K = 27); a tail block (O % 4); an odd
# pixel count (the last pixel alone); borders, stride 2; clamps drawn per case (fix-up or not)
PAIR_LOOP = [{"op": "Conv", "shape": shape, "kernel": (3, 3), "strides": strides, "pads": pads, "out": out,
              "zero_point": zp, "out_zero_point": out_zp}
             for (shape, strides, pads, out, zp, out_zp) in [
                 ((1, 6, 7, 16), (1, 1), (1, 1, 1, 1), 16, None, "low"),
                 ((1, 5, 5, 32), (2, 2), (0, 1, 1, 1), 8, "low", None),
                 ((1, 7, 6, 3), (1, 1), (1, 1, 1, 1), 6, "high", "low"),
                 ((1, 3, 5, 16), (1, 1), (0, 0, 0, 0), 10, None, "high")]]


def test_packed_scales_layout():
    from mcudeploy.kernels.mve import packed_scales
    packed = packed_scales(np.arange(6, dtype=np.int32), 7, np.array([-1, -2, -3, -4, -5, -6]))
    assert packed.dtype == np.int32 and packed.shape == (24,)
    assert packed[:12].tolist() == [0, 1, 2, 3, 7, 7, 7, 7, -1, -2, -3, -4]
    assert packed[12:].tolist() == [4, 5, 0, 0, 7, 7, 0, 0, -5, -6, -1, -1]   # the tail block's padding


def test_dot_constants_pack_the_scales_of_im2col_convs_only():
    from mcudeploy.kernels.mve import dot_constants
    from mcudeploy.kernels.prepared import prepared_params
    graph, _ = case_graph(PAIR_LOOP + POINTWISE[:1], 7)
    nodes = [n for n in graph.nodes if n.op == "Conv"]
    sizes = [dot_constants(n, prepared_params(n))[2].size for n in nodes]
    assert sizes == [12 * 4, 12 * 2, 12 * 2, 12 * 3, 16]   # 12 int32 per block of 4; pointwise: bias'


@pytest.mark.parametrize("seed", [8, 9])
def test_pair_loop_on_the_host(seed):
    graph, feeds = case_graph(PAIR_LOOP, seed)
    wrong, deployment = mismatches(graph, feeds, "stm32n6", "host")
    assert not wrong, wrong
    assert deployment.kernels.counts()["mve-conv"] == len(PAIR_LOOP)


@pytest.mark.slow
@needs_toolchain
@pytest.mark.parametrize("seed", [8, 9])
def test_pair_loop_under_qemu_m55(seed):
    graph, feeds = case_graph(PAIR_LOOP, seed)
    wrong, _ = mismatches(graph, feeds, "stm32n6", "qemu-m55")
    assert not wrong, wrong
