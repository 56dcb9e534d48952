"""Shape features of a kernel call: how many times each loop level of the kernel runs.

Input: an IR node (NHWC, static shapes). Output: ``{feature: count}``. The instruction
model (:mod:`.instructions`) is linear in these counts, ``instructions = sum_f c_f x n_f``,
with coefficients fitted per (runtime, build, variant, kernel) to exact QEMU counts by
``tools/fit_instruction_model.py``; so a feature set is the loop structure shared by the
kernels of one family, and a new kernel variant is a new fit over the same features.

Window kernels (convolution, depthwise convolution, pooling), per axis: ``v_r(y)`` = kernel
rows ``i`` whose input row ``y*s_h - pad_top + i*d_h`` lies inside the input (likewise
``v_c(x)``), ``S_r = sum_y v_r(y)``, ``S_c = sum_x v_c(x)``; with batch N, output H_o x W_o x C_o,
kernel k_h x k_w and C_g input channels per group:

    pixels     = N H_o W_o               outputs   = pixels C_o
    tap_rows   = outputs k_h             valid_rows = N C_o W_o S_r
    tap_cols   = valid_rows k_w          taps      = N C_o S_r S_c      (in-bounds taps)
    macs       = taps C_g                macs_v{4,8,16} = taps ceil(C_g / {4,8,16})

(the ``_v`` counts are the iterations of an inner channel loop vectorised by 4, 8 or 16
lanes). Fully connected: ``rows``, ``outputs = rows x units``, ``macs = outputs x depth``
(and the vector forms). Elementwise kernels: their NHWC loop levels ``n_h = N H``,
``pixels``, ``elements``. Every family has ``calls = 1`` (the per-call cost).

Blocked kernels (optimised variants: im2col + a matrix kernel over blocks of ``b_p`` pixels x
``b_c`` output channels x ``b_k`` depth, e.g. CMSIS-NN's and mcudeploy's DSP 2 x 2 x 4), for
``(b_p, b_c, b_k)`` in :data:`BLOCKS`, prefix ``b{b_p}{b_c}{b_k}_``: ``groups = ceil(P/b_p)``,
``blocks = groups ceil(C_o/b_c)``, ``iters = blocks ceil(K/b_k)`` (``K = k_h k_w C_g``),
``edge_p`` / ``edge_c`` (the iterations of the partial last pixel / channel block),
``im2col = P ceil(K/b_k) b_k``; ``im2col_aligned`` / ``im2col_unaligned`` split ``P K`` by
whether ``C_g`` is a multiple of 4 (a kernel that copies whole words or gathers bytes).
Depthwise with ``b`` channels per word: ``dw{b}_groups = P ceil(C/b)``, ``dw{b}_iters =
taps_1 ceil(C/b)`` with ``taps_1`` the in-bounds taps of one channel, ``dw{b}_tail =
taps_1 (C mod b)``, and split by path for kernels with a 3x3 special case (``band_rows``,
``band_pairs`` of pixel pairs; ``generic_window`` otherwise). The fit keeps, per kernel, the feature set that predicts held-out
layers best (``tools/fit_instruction_model.py``).

The optimised variants' own loop counts (im2col branches, 2-pixel blocks and channel tails,
the 3x3 fast paths, the requantization path from the prepared shifts: ``context["left_shifts"]``)
come from :mod:`.kernel_loops` and are added to the same dictionaries.
"""
from __future__ import annotations

import math
from typing import Callable

from ..ir import Node, Value
from ..kernels.mve import band_chunk_groups, depthwise_scratch_bytes
from .kernel_loops import (
    conv_variant_counts,
    depthwise_dsp_counts,
    depthwise_mve_counts,
    depthwise_row_counts,
    fully_connected_variant_counts,
    pool_variant_counts,
    requant_counts,
    window_shape,
)

FeatureFunction = Callable[[Node, dict], dict[str, float]]
FAMILIES: dict[str, FeatureFunction] = {}
LANES = (4, 8, 16)
BLOCKS = ((2, 2, 4), (2, 4, 16), (4, 4, 16), (1, 2, 4), (1, 4, 16))
DEPTHWISE_LANES = (4, 8, 16)


def family(*names: str) -> Callable[[FeatureFunction], FeatureFunction]:
    """Register the feature function of kernel families ``names``."""
    def register(function: FeatureFunction) -> FeatureFunction:
        for name in names:
            FAMILIES[name] = function
        return function
    return register


def features_of(kernel: str, node: Node, context: dict | None = None) -> dict[str, float]:
    """The features of ``node`` run by kernel family ``kernel`` (``KeyError`` if unknown).
    ``context``: facts from the plan (``in_place``: output aliases input, no copy)."""
    base = kernel.split(":")[0]
    return FAMILIES[base](node, context or {})


def _vector_counts(prefix: str, count: float, inner: int) -> dict[str, float]:
    return {f"{prefix}_v{lanes}": count * math.ceil(inner / lanes) for lanes in LANES}


def _valid(out_size: int, stride: int, pad: int, dilation: int, kernel: int, size: int) -> int:
    """sum over output positions of the kernel taps that land inside the input (one axis)."""
    total = 0
    for position in range(out_size):
        start = position * stride - pad
        total += sum(1 for tap in range(kernel) if 0 <= start + tap * dilation < size)
    return total


def window_features(x: Value, out: Value, kernel: tuple[int, ...], strides, pads, dilations,
                    channels_per_group: int, per_channel: bool | None = None,
                    facts: dict | None = None) -> dict[str, float]:
    """Features of a window kernel over NHWC (module docstring). ``per_channel``: a depthwise or
    pooling kernel (default: one channel per group), else a dense conv (also with C = 1).
    ``facts``: what the loop counts need beyond the shape (the Helium depthwise's ``band``
    path, ``left_shifts``)."""
    per_channel = channels_per_group == 1 if per_channel is None else per_channel
    batch, height, width, _ = x.shape
    _, out_h, out_w, out_c = out.shape
    kernel_h, kernel_w = kernel
    rows = _valid(out_h, strides[0], pads[0], dilations[0], kernel_h, height)
    cols = _valid(out_w, strides[1], pads[1], dilations[1], kernel_w, width)
    pixels = batch * out_h * out_w
    outputs = pixels * out_c
    valid_rows = batch * out_c * out_w * rows
    taps = batch * out_c * rows * cols
    base = {"calls": 1, "n_h": batch * out_h, "pixels": pixels, "outputs": outputs,
            "tap_rows": outputs * kernel_h, "valid_rows": valid_rows, "tap_cols": valid_rows * kernel_w,
            "taps": taps, "macs": taps * channels_per_group,
            **_vector_counts("macs", taps, channels_per_group)}
    # im2col-style kernels copy each pixel's receptive field: per tap (padding or not) and per byte
    valid_pixel_taps = batch * rows * cols
    pointwise = (kernel_h, kernel_w) == (1, 1) and tuple(strides) == (1, 1) and not any(pads)
    # a pointwise conv whose rows fill whole 16-byte vectors is read in place: no copy at all
    copy = 0 if pointwise and channels_per_group % 16 == 0 else 1
    base.update({"im2col_taps": copy * pixels * kernel_h * kernel_w, "im2col_valid_taps": copy * valid_pixel_taps,
                 "im2col_valid_rows": copy * batch * rows * out_w, "im2col_pixel_rows": copy * pixels * kernel_h,
                 "im2col_bytes": copy * valid_pixel_taps * channels_per_group * x.dtype.itemsize,
                 "im2col_pointwise": pixels * channels_per_group if pointwise else 0,
                 "im2col_inplace_pixels": (1 - copy) * pixels})
    shape = {**window_shape(x.shape, out.shape, kernel, strides, pads, dilations, channels_per_group), **(facts or {})}
    if per_channel:
        base.update({**depthwise_dsp_counts(shape), **depthwise_row_counts(shape)})
        base.update(depthwise_mve_counts(shape))
        base.update(depthwise_blocks(pixels, out_c, valid_pixel_taps, kernel_h * kernel_w))
        base.update(depthwise_3x3_split(batch * out_h, out_w, out_c, pixels * kernel_h * kernel_w,
                                        (kernel_h, kernel_w) == (3, 3) and tuple(dilations) == (1, 1)))
    else:
        base.update(matrix_blocks(pixels, out_c, kernel_h * kernel_w * channels_per_group, channels_per_group))
        direct = (kernel_h, kernel_w) == (1, 1) and tuple(strides) == (1, 1) and not any(pads[:2]) \
            and tuple(x.shape[1:3]) == tuple(out.shape[1:3])
        base.update(conv_variant_counts({**shape, "out_channels": out_c}, direct))
    return base


def matrix_blocks(pixels: int, channels: int, depth: int, channels_per_group: int) -> dict[str, float]:
    """Blocked-kernel features (module docstring) of ``pixels`` x ``channels`` x ``depth``."""
    features: dict[str, float] = {"im2col_aligned": pixels * depth if channels_per_group % 4 == 0 else 0,
                "im2col_unaligned": pixels * depth if channels_per_group % 4 else 0}
    for block_p, block_c, block_k in BLOCKS:
        prefix = f"b{block_p}{block_c}{block_k}_"
        groups, depth_blocks = math.ceil(pixels / block_p), math.ceil(depth / block_k)
        channel_blocks = math.ceil(channels / block_c)
        features.update({prefix + "groups": groups, prefix + "blocks": groups * channel_blocks,
                         prefix + "iters": groups * channel_blocks * (depth // block_k),
                         prefix + "rem": groups * channel_blocks * (depth % block_k),
                         prefix + "edge_p": (1 if pixels % block_p else 0) * channel_blocks * depth_blocks,
                         prefix + "edge_c": groups * (1 if channels % block_c else 0) * depth_blocks,
                         prefix + "im2col": pixels * depth_blocks * block_k})
    return features


def depthwise_3x3_split(rows: int, width: int, channels: int, window_taps: int, is_3x3: bool) -> dict[str, float]:
    """Kernels with a special 3x3 path (a row band, pixel pairs) and a generic one: the counts
    of each path, zero for the path not taken."""
    features: dict[str, float] = {}
    for lanes in DEPTHWISE_LANES:
        groups = math.ceil(channels / lanes)
        features.update({f"dw{lanes}_band_rows": rows * groups if is_3x3 else 0,
                         f"dw{lanes}_band_pairs": rows * math.ceil(width / 2) * groups if is_3x3 else 0,
                         f"dw{lanes}_generic_window": 0 if is_3x3 else window_taps * groups})
    return features


def depthwise_blocks(pixels: int, channels: int, taps_per_channel: int, kernel_taps: int) -> dict[str, float]:
    """``b`` channels per word / vector: per pixel and group, per in-bounds tap (``iters``) or per
    tap of the whole window (``window``: kernels that pad the field first), the ``C mod b`` tail."""
    features: dict[str, float] = {}
    for lanes in DEPTHWISE_LANES:
        groups = math.ceil(channels / lanes)
        features.update({f"dw{lanes}_groups": pixels * groups, f"dw{lanes}_iters": taps_per_channel * groups,
                         f"dw{lanes}_window": pixels * kernel_taps * groups,
                         f"dw{lanes}_tail": taps_per_channel * (channels % lanes)})
    return features


@family("conv2d", "depthwise_conv2d")
def conv_features(node: Node, context: dict) -> dict[str, float]:
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    attrs = node.attrs
    depthwise = w.shape[3] == 1 and attrs.get("group", 1) == x.shape[3] and attrs.get("group", 1) > 1
    # the Helium depthwise takes its band path when the plan gives it the band as scratch
    # (in passes over group chunks when the whole band is above the scratch budget)
    band = depthwise and depthwise_scratch_bytes(node) > 0
    passes = math.ceil(math.ceil(x.shape[3] / 8) / band_chunk_groups(node)) if band else 1
    facts = {"band": band, "passes": passes, "left_shifts": context.get("left_shifts", False),
             "clamped_low": context.get("clamped_low", False)}
    return {**window_features(x, out, tuple(w.shape[1:3]), attrs["strides"], attrs["pads"][:2],
                              attrs["dilations"], w.shape[3], depthwise, facts),
            **requant_counts(math.prod(out.shape[:3]), out.shape[3], context)}


@family("conv_accumulate")
def conv_accumulate_features(node: Node, context: dict) -> dict[str, float]:
    """A ConvAccumulate is a dense conv's loops over its channel slice (C_g = the weights' last
    axis), without a requantization path (its int32 sum is stored)."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    attrs = node.attrs
    return window_features(x, out, tuple(w.shape[1:3]), attrs["strides"], attrs["pads"][:2], attrs["dilations"],
                           w.shape[3], False)


@family("avg_pool", "max_pool")
def pool_features(node: Node, context: dict) -> dict[str, float]:
    attrs = node.attrs
    x, out, kernel = node.inputs[0], node.outputs[0], tuple(attrs["kernel_shape"])
    shape = window_shape(x.shape, out.shape, kernel, attrs["strides"], attrs["pads"][:2], (1, 1), 1)
    return {**window_features(x, out, kernel, attrs["strides"], attrs["pads"][:2], (1, 1), 1),
            **pool_variant_counts(shape, node.op == "AveragePool")}


@family("transpose_conv2d")
def transpose_conv_features(node: Node, context: dict) -> dict[str, float]:
    """Scatter form: every input pixel adds its kernel window into an accumulator buffer."""
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    pixels = math.prod(x.shape[:3])
    taps = pixels * w.shape[0] * w.shape[1] * w.shape[2]
    return {"calls": 1, "pixels": pixels, "outputs": math.prod(out.shape), "taps": taps,
            "macs": taps * w.shape[3], **_vector_counts("macs", taps, w.shape[3])}


@family("fully_connected")
def fully_connected_features(node: Node, context: dict) -> dict[str, float]:
    x, w = node.inputs[0], node.inputs[1]
    depth = x.shape[-1]
    rows = x.size // depth
    units = w.shape[0] if w.shape[-1] == depth else w.shape[-1]
    outputs = rows * units
    return {"calls": 1, "rows": rows, "outputs": outputs, "macs": outputs * depth,
            **_vector_counts("macs", outputs, depth), **matrix_blocks(rows, units, depth, depth),
            **fully_connected_variant_counts(rows, units, depth), **requant_counts(rows, units, context)}



def _loop_levels(shape: tuple[int, ...]) -> dict[str, float]:
    """NHWC loop-level iteration counts of a kernel looping over ``shape`` (rank <= 4)."""
    padded = (1,) * (4 - len(shape)) + tuple(shape[-4:]) if len(shape) <= 4 else \
        (math.prod(shape[:-3]),) + tuple(shape[-3:])
    batch, height, width, channels = padded
    elements = batch * height * width * channels
    return {"calls": 1, "n_h": batch * height, "pixels": batch * height * width, "elements": elements,
            **_vector_counts("elements", batch * height * width, channels)}


@family("add", "mul", "quantize", "dequantize", "smooth_step", "hard_swish", "leaky_relu", "transpose",
        "strided_slice", "resize", "pad", "requantize_accumulator")
def elementwise_features(node: Node, context: dict) -> dict[str, float]:
    """The NHWC loop levels, and the flat loops of the optimised Add / Mul (``elements // 4``
    words and the ``elements mod 4`` tail; Helium: ``ceil(elements / 4)`` predicated vectors)."""
    elements = math.prod(node.outputs[0].shape)
    return {**_loop_levels(node.outputs[0].shape), "flat_words": elements // 4, "flat_tail": elements % 4,
            "flat_vectors": math.ceil(elements / 4)}


@family("softmax")
def softmax_features(node: Node, context: dict) -> dict[str, float]:
    """``exp_elements``: the elements whose exponential is computed (inputs more than
    ``diff_min`` below the row's maximum are skipped): ``elements x softmax_pass``, the share
    of the int8 range within ``diff_min`` of the maximum (data-dependent: an expectation)."""
    shape = node.outputs[0].shape
    depth = shape[-1]
    rows = math.prod(shape) // depth
    return {"calls": 1, "rows": rows, "elements": rows * depth,
            "exp_elements": rows * depth * context.get("softmax_pass", 1.0)}


def softmax_pass(diff_min: int) -> float:
    """Share of the 256 int8 differences ``x - max`` in ``[diff_min, 0]``."""
    return min(1.0, (1 - diff_min) / 256.0)


@family("mean")
def mean_features(node: Node, context: dict) -> dict[str, float]:
    """Loops n, y, x, c over the output, then the reduced n, y, x, c ranges of each output."""
    x, out = node.inputs[0], node.outputs[0]
    shape = (1,) * (4 - x.rank) + tuple(x.shape) if x.rank <= 4 else x.shape
    axes = {a % x.rank + (4 - x.rank) for a in node.attrs.get("axes", range(x.rank))}
    reduced = [shape[axis] if axis in axes else 1 for axis in range(4)]
    outputs = math.prod(out.shape)
    return {"calls": 1, "outputs": outputs, "reduced_rows": outputs * reduced[0] * reduced[1],
            "reduced_pixels": outputs * reduced[0] * reduced[1] * reduced[2], "elements": math.prod(x.shape)}


@family("concat")
def concat_features(node: Node, context: dict) -> dict[str, float]:
    out = node.outputs[0]
    axis = node.attrs["axis"] % out.rank
    blocks = math.prod(out.shape[:axis])
    inputs = [v for v in node.inputs if v is not None]
    # a concatenation the plan wrote in place is elided (no call); a called one copies every input
    return {"calls": 1, "inputs": len(inputs), "copies": blocks * len(inputs), "bytes": out.nbytes}


@family("reshape")
def reshape_features(node: Node, context: dict) -> dict[str, float]:
    return {"calls": 1, "bytes": 0 if context.get("in_place") else node.outputs[0].nbytes}
