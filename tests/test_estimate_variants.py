"""The optimised kernel variants' loop counts (estimate/kernel_loops.py) against the loops of
their C code (runtime/src/dsp, runtime/src/mve) transcribed here and counted by running them,
and their requantization paths against the C code's rules (QEMU: test_estimate_qemu.py)."""
from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import pytest

from mcudeploy.estimate.features import features_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from layer_graphs import LayerBatch  # noqa: E402

CONVS = [dict(h=6, w=5, c=4, o=6, k=3, stride=1, pad="same"), dict(h=7, w=9, c=8, o=5, k=3, stride=2, pad="same"),
         dict(h=9, w=4, c=16, o=3, k=(5, 1), stride=1, pad="valid"), dict(h=5, w=5, c=3, o=4, k=3, stride=1, pad="same"),
         dict(h=4, w=6, c=32, o=7, k=1, stride=1, pad="valid"), dict(h=3, w=8, c=12, o=4, k=(1, 5), stride=1, pad="same")]
DEPTHWISE = [dict(h=6, w=7, c=4, k=3, stride=1, pad="same"), dict(h=9, w=8, c=13, k=3, stride=2, pad="same"),
             dict(h=6, w=6, c=6, k=(5, 3), stride=1, pad="same"), dict(h=5, w=5, c=16, k=3, stride=1, pad="valid"),
             dict(h=7, w=5, c=24, k=(4, 1), stride=(2, 1), pad="same"), dict(h=8, w=8, c=16, k=3, stride=1, pad="same",
                                                                             dilation=(2, 2))]


def node_of(builder: str, **shape):
    batch = LayerBatch("one", seed=5)
    getattr(batch, builder)(**shape)
    return batch.finish().nodes[0]


def geometry(node):
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    (stride_h, stride_w), (pad_top, pad_left) = node.attrs["strides"], node.attrs["pads"][:2]
    return x.shape, w.shape, out.shape, stride_h, stride_w, pad_top, pad_left


def dsp_conv_loops(node) -> Counter:
    """conv_dsp.c's field_by_taps (C % 4 == 0) and gemm_dsp.c's 2x2 blocks, counted."""
    (_, height, width, channels), (_, kernel_h, kernel_w, _), (_, out_h, out_w, out_c), sh, sw, pt, pl = geometry(node)
    counts, pixels = Counter(), out_h * out_w
    steps = math.ceil(kernel_h * kernel_w * channels / 4)
    for pixel in range(pixels):
        y, x = divmod(pixel, out_w)
        in_x0 = x * sw - pl
        whole = in_x0 >= 0 and in_x0 + kernel_w <= width
        for i in range(kernel_h):
            if not 0 <= y * sh - pt + i < height:
                counts["i2c4_pad_rows"] += 1
                counts["i2c4_pad_steps"] += math.ceil(kernel_w * channels / 4)
            elif whole:
                counts["i2c4_whole_rows"] += 1
                counts["i2c4_whole_steps"] += math.ceil(kernel_w * channels / 4)
            else:
                counts["i2c4_edge_taps"] += kernel_w
                counts["i2c4_edge_steps"] += kernel_w * math.ceil(channels / 4)
    for pixel in range(0, pixels, 2):
        pair = pixel + 1 < pixels
        for _pair in range(0, out_c - 1, 2):
            counts["g2_pair_steps" if pair else "g2_single_steps"] += steps
        if out_c % 2:
            counts["g2_pair_tail_steps" if pair else "g2_single_tail_steps"] += steps
    return counts


def dsp_depthwise_loops(node) -> Counter:
    """depthwise_dsp.c: per row, group and pixel, the 3x3 fast path or the in-bounds taps."""
    (_, height, width, channels), (_, kernel_h, kernel_w, _), (_, out_h, out_w, _), sh, sw, pt, pl = geometry(node)
    counts = Counter()
    for y in range(out_h):
        rows = [i for i in range(kernel_h) if 0 <= y * sh - pt + i < height]
        unrolled = (kernel_h, kernel_w) == (3, 3) and len(rows) == 3
        for _group in range(channels // 4):
            counts["dwd_row_groups"] += 1
            counts["dwd_unrolled_row_groups"] += unrolled
            for x in range(out_w):
                cols = [j for j in range(kernel_w) if 0 <= x * sw - pl + j < width]
                if unrolled and len(cols) == 3:
                    counts["dwd_fast"] += 1
                elif unrolled and len(cols) == 2:
                    counts["dwd_border"] += 1
                else:
                    counts["dwd_slow_rows"] += len(rows)
                    counts["dwd_slow_taps"] += len(rows) * len(cols)
        for _channel in range(channels % 4):
            for x in range(out_w):
                counts["dwd_tail_taps"] += len(rows) * sum(0 <= x * sw - pl + j < width for j in range(kernel_w))
    return counts


def mve_depthwise_loops(node, band: bool) -> Counter:
    """depthwise_mve.c: band_pass (the ring of kH slots, rows copied once, pixel pairs) or
    pixel_pass (every pixel, group and tap)."""
    (_, height, width, channels), (_, kernel_h, kernel_w, _), (_, out_h, out_w, _), sh, sw, pt, pl = geometry(node)
    counts, groups = Counter(), math.ceil(channels / 8)
    dh, dw = node.attrs["dilations"]
    if not band:
        for _pixel in range(out_h * out_w):
            for _group in range(groups):
                counts["dwp_taps"] += kernel_h * kernel_w
        for y in range(out_h):
            for x in range(out_w):
                counts["dwp_valid_taps"] += groups * sum(0 <= y * sh - pt + i * dh < height
                                                         and 0 <= x * sw - pl + j * dw < width
                                                         for i in range(kernel_h) for j in range(kernel_w))
        return counts
    empty = object()
    loaded = [empty] * kernel_h
    for y in range(out_h):
        for i in range(kernel_h):
            in_y = y * sh - pt + i
            slot = (in_y + pt) % kernel_h
            if loaded[slot] != in_y and (in_y >= 0 or loaded[slot] is not empty):
                counts["dwb_data_rows" if 0 <= in_y < height else "dwb_pad_rows"] += 1
                loaded[slot] = in_y
        for _group in range(groups):
            for _pixel in range(0, out_w - 1, 2):
                counts["dwb_pair_taps"] += kernel_h * kernel_w
            if out_w % 2:
                counts["dwb_single_taps"] += kernel_h * kernel_w
    return counts


def check(features: dict, counted: Counter) -> None:
    assert {name: features.get(name, 0) for name in counted} == dict(counted)


@pytest.mark.parametrize("shape", [s for s in CONVS if s["c"] % 4 == 0 and s["k"] != 1])
def test_dsp_conv_counts_follow_its_loops(shape):
    from mcudeploy.kernels.dsp import conv_block
    node = node_of("conv", **shape)
    features, block = features_of("conv2d", node), conv_block(node)
    if block == 2:
        check(features, dsp_conv_loops(node))
        return
    # the quad / triple blocks (conv_dsp.c quad_blocks): ceil(P / block) calls, K_p / 4 steps per channel
    pixels, out_c = math.prod(node.outputs[0].shape[:3]), node.outputs[0].shape[3]
    steps = math.ceil(math.prod(node.inputs[1].shape[1:]) / 4)
    assert features[f"q{block}_calls"] == math.ceil(pixels / block)
    assert features[f"q{block}_steps"] == math.ceil(pixels / block) * out_c * steps
    assert not any(name.startswith("g2_") for name in features)


@pytest.mark.parametrize("shape", CONVS)
def test_conv_blocks_count_pairs_and_channel_tails(shape):
    node = node_of("conv", **shape)
    features, pixels = features_of("conv2d", node), math.prod(node.outputs[0].shape[:3])
    out_c, depth = node.outputs[0].shape[3], math.prod(node.inputs[1].shape[1:])
    pair_steps = features["g4_pair_steps"] + features["g4p_steps"]   # the packed pair loop's or the generic blocks'
    assert pair_steps + features["g4_single_steps"] == math.ceil(pixels / 2) * (out_c // 4) * math.ceil(depth / 16)
    assert pair_steps == (pixels // 2) * (out_c // 4) * math.ceil(depth / 16)
    assert sum(features.get(f"{prefix}_outputs", 0) for prefix in ("g2", "q3", "q4")) == pixels * out_c
    reads_in_place = shape["k"] == 1 and shape["c"] % 16 == 0
    # short rows: one predicated copy each; whole 16-byte rows: one DLS/LE copy each
    copied = sum(features.get(f"i2c16_{kind}pixels", 0) for kind in ("", "short_", "window_"))
    assert (copied == 0) == reads_in_place
    if shape["k"] != 1:
        assert copied == pixels


@pytest.mark.parametrize("left_shifts", [False, True])
@pytest.mark.parametrize("clamped_low", [False, True])
@pytest.mark.parametrize("shape", CONVS + [dict(h=6, w=6, c=16, o=8, k=3, stride=1, pad="same")])
def test_packed_pair_loop_counts_follow_its_rule(shape, left_shifts, clamped_low):
    """gemm_mve.c packed_blocks: an im2col conv's pixel pairs take the asm pair loop over their
    whole blocks of 4 channels when every shift is <= -1 and Kp >= 32 (Kp / 16 steps per block,
    the fix-up where activation_min < output_offset); the others the generic blocks."""
    node = node_of("conv", **shape)
    features = features_of("conv2d", node, {"left_shifts": left_shifts, "clamped_low": clamped_low})
    pixels, out_c = math.prod(node.outputs[0].shape[:3]), node.outputs[0].shape[3]
    chunks = math.ceil(math.prod(node.inputs[1].shape[1:]) / 16)
    pointwise = shape["k"] == 1 and shape["stride"] == 1
    applies = not pointwise and not left_shifts and chunks >= 2 and out_c >= 4
    blocks = (pixels // 2) * (out_c // 4) * applies
    assert (features["g4p_calls"], features["g4p_blocks"]) == ((pixels // 2) * applies, blocks)
    assert features["g4p_steps"] == blocks * chunks and features["g4p_turns"] == blocks * (chunks // 2)
    assert features["g4p_fixups"] == blocks * (not clamped_low)
    assert features["g4_pair_blocks"] == (pixels // 2) * (out_c // 4) * (not applies)
    whole_rows = shape["k"] if isinstance(shape["k"], int) else shape["k"][1]
    assert (features.get("i2c16_window_pixels", 0) > 0) == (not pointwise and whole_rows * shape["c"] % 16 == 0)


@pytest.mark.parametrize("shape", DEPTHWISE)
def test_depthwise_counts_follow_both_variants_loops(shape):
    from mcudeploy.kernels.mve import depthwise_scratch_bytes
    node = node_of("conv", **{"o": shape["c"], "group": shape["c"], **shape})
    features = features_of("depthwise_conv2d", node)
    if "dilation" not in shape:
        check(features, dsp_depthwise_loops(node))
    band = depthwise_scratch_bytes(node) > 0
    assert band == ("dilation" not in shape)   # the band fits the scratch budget of these small layers
    check(features, mve_depthwise_loops(node, band))


@pytest.mark.parametrize("pixels, channels, copied", [(10, 8, 2), (11, 8, 1), (9, 3, 5), (8, 16, 0), (12, 24, 2)])
def test_pointwise_copies_only_the_pairs_past_the_end(pixels, channels, copied):
    """conv_mve.c: a pair is read in place when (p + 1 + pair) C + Kp - C <= P C."""
    from mcudeploy.estimate.kernel_loops import pointwise_copied
    row = math.ceil(channels / 16) * 16
    counted = sum((1 + (p + 1 < pixels)) for p in range(0, pixels, 2)
                  if (p + 1 + (p + 1 < pixels)) * channels + row - channels > pixels * channels)
    assert counted == copied == pointwise_copied(pixels, channels, row)


def test_requant_paths_follow_the_kernels_rules():
    """runtime/src/dsp/mcu_dsp_internal.h: simple = every shift <= -1 and |bias| + K 128 255 <
    2^30; wide = |bias| >= (2^30 >> left) - reach; a depthwise group of 4 runs wide together.
    runtime/src/mve: the general path as soon as one shift is >= 0."""
    from mcudeploy.estimate.kernel_loops import requant_context
    plain = requant_context([-3, -5], [1 << 30, 1 << 30], [100, -100], 9, grouped=False)
    assert plain == {"left_shifts": False, "general_requant": False, "wide_channels": 0}
    left = requant_context([-3, 0], [1 << 30] * 2, [100, 100], 9, grouped=False)
    assert left == {"left_shifts": True, "general_requant": True, "wide_channels": 0}
    huge = (1 << 30) - 9 * 128 * 255        # the first bias that is wide
    grouped = requant_context([-3] * 6, [1 << 30] * 6, [0, huge, 0, 0, 0, huge - 1], 9, grouped=True)
    assert grouped == {"left_shifts": False, "general_requant": True, "wide_channels": 4}
