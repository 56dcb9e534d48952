"""Kernel variants for Cortex-M cores with the M-profile Vector Extension (Helium: Cortex-M55,
M85): ``runtime/src/mve/*.c``, declared in ``runtime/include/mcu_runtime_mve.h``, function
names ``<reference name>_mve``. Each is bit-exact with the reference kernel it replaces.

Variant: technique; scratch; overlap rule. Ranked above the DSP variants (an M55 has both).

* ``mve-conv``: int8 im2col (MVE copies; inside windows of whole 16-byte kernel rows by an
  unpredicated DLS/LE loop), 2 pixels x 4 output channels, VMLADAVA.S8 (a naked-asm loop over
  the blocks of a pair), the input offset folded into the bias, which (im2col convs) carries
  the multipliers and shifts too, packed by block of four channels (:func:`packed_scales`: +8
  bytes of flash per output channel, the call's multiplier / shift arrays stay); every weight
  row read once per pixel pair; scratch 2*Kp bytes (none for a pointwise 1x1 with
  C % 16 == 0); a pointwise 1x1 reads its rows in place for any C (the Kp - K bytes past a
  row meet the zero padding of the weight rows; the last pair goes through the columns);
  blocks of 2 pixels, read first unless read in place.
* ``mve-depthwise``: groups of 8 channels (16-bit lanes, VMULLB / VMULLT), dilation 1 through
  a ring of kH zero-point-padded input rows stored group-major (every tap 8 bytes further:
  post-increment loads), pixel pairs sharing the weight loads, the output stage of a row's
  full groups in asm; scratch the band (kH rows x every group) when it fits the scratch
  budget, else the band of the groups that fit, in passes over group chunks (small images,
  many channels); otherwise (dilation > 1) pixel by pixel without scratch. Overlap: the
  pixel-order :func:`depthwise_overlap` (safe on every path; chunked passes: the output below
  the input), with the exact :func:`band_overlap` (one-pass band: after output row y only input
  rows from y*sh - pt + kH on are read) as the alternative the final plan may keep instead.
* ``mve-fully-connected``: the conv's 2x4 blocks with rows as pixels; scratch 2*Kp when
  K % 16 != 0; no overlap. 1-3 units (a classifier's last layer) take the remainder block
  alone (``mcu_mve_gemm_few``), as does a pointwise conv of 1-3 output channels.

The conv and fully connected calls go to ``mcu_conv2d_s8_mve_prechecked`` /
``mcu_fully_connected_s8_mve_prechecked``: the C argument checks are the code generator's
(made at generation time), so a tiny layer does not pay them on every call (a 1x1 conv of
one pixel, 256 -> 2: 938 -> 438 instructions with the remainder-block changes).
* ``mve-elementwise``: Add / Mul without broadcasting, 4 elements per int32 vector; no
  scratch; the reference proof.
* ``mve-pool``: average (8 channels, 16-bit sums, windows <= 256) and max (16 channels,
  VMAX.S8); no scratch; the reference proof.

Offline preparation (``prepare_constants``): weight rows padded to ``Kp = ceil16(K)`` and
interleaved 16 bytes at a time by blocks of four output channels (:func:`quad_rows`); the
input offset folded into the bias (:func:`.prepared.folded_bias`); depthwise weights group
major and its bias, multipliers and shifts in one block per group (:func:`depthwise_constants`). The requantization
(VQRDMULH, VRSHL with a sign fix-up) is exact for every int32 accumulator: no bound to check.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .catalogue import register
from .overlap import NO_READ, nhwc_check
from .overlap_blocked import conv_block_proof, conv_row_proof
from .prepared import (
    folded_bias,
    int8_refusal,
    is_depthwise,
    params_or_refusal,
    prepared_params,
    scratch_budget,
    scratch_call,
    scratch_refusal,
    weight_rows,
)
from .scratch_formula import scratch_formula
from .variant import KernelVariant

RANK = 20   # above the DSP variants
MVE_CORES = "the M-profile Vector Extension (Helium: Cortex-M55 / M85)"
HEADERS = ("include/mcu_runtime_mve.h", "src/mcu_variants.h", "src/mve/mcu_mve_simd.h",
           "src/mve/mcu_mve_internal.h", "src/mve/mcu_mve_gemm.h", "src/mve/mcu_mve_depthwise_taps.h")


def has_mve(core) -> bool:
    return core.mve != "none"


def row_length(depth: int) -> int:
    return (depth + 15) // 16 * 16


def quad_rows(rows: np.ndarray) -> np.ndarray:
    """``[O, K]`` int8 rows -> the "quad rows" layout of ``mcu_runtime_mve.h``, flat, ``O * Kp``."""
    count, depth = rows.shape
    padded = np.zeros((count, row_length(depth)), dtype=np.int8)
    padded[:, :depth] = rows
    blocks = []
    for start in range(0, count, 4):
        block = padded[start:start + 4]
        blocks.append(block.reshape(block.shape[0], -1, 16).transpose(1, 0, 2).reshape(-1))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int8)


def conv_accepts(node: Node) -> str | None:
    if node.attrs.get("group", 1) != 1:
        return f"group {node.attrs.get('group')}: grouped and depthwise convolutions have their own kernels"
    return int8_refusal(node) or params_or_refusal(node)[1] or scratch_refusal(node, conv_scratch_bytes(node))


def _pointwise_in_place(node: Node) -> bool:
    """1x1, stride 1, no padding: rows read in place (Kp - K bytes past a row are multiplied by
    the zero padding of the weight rows; the last pair uses the columns, conv_mve.c)."""
    attrs, x, w, y = node.attrs, node.inputs[0], node.inputs[1], node.outputs[0]
    return (tuple(w.shape[1:3]) == (1, 1) and tuple(attrs["strides"]) == (1, 1) and not any(attrs["pads"])
            and x.shape[1:3] == y.shape[1:3])


def conv_overlap(node: Node, value) -> int | str:
    """Blocks of two pixels; an im2col block copies its fields before its first store, a
    pointwise block read in place stores its first channels while still reading its rows."""
    return conv_block_proof(2, reads_first=not _pointwise_in_place(node))(node, value)


def conv_scratch_bytes(node: Node) -> int:
    """2 * Kp bytes of columns, none for a pointwise conv read in place with C % 16 == 0."""
    aligned = _pointwise_in_place(node) and node.inputs[0].shape[3] % 16 == 0
    return scratch_formula("MCU_CONV2D_S8_MVE_SCRATCH_BYTES", depth=int(np.prod(node.inputs[1].shape[1:])),
                           aligned_pointwise=int(aligned))


def packed_scales(bias: np.ndarray, multiplier, shift) -> np.ndarray:
    """bias', multipliers and shifts of ``O`` channels -> ``ceil(O/4)`` blocks of 12 int32 (the
    block's four bias', four multipliers, four shifts; channels >= O: 0, 0, -1), so that the
    output stage of a block loads each with one post-increment vector load (conv_mve.c)."""
    channels = bias.size
    blocks = -(-channels // 4)
    words = np.zeros((3, blocks * 4), dtype=np.int64)
    words[2] = -1
    words[0, :channels] = bias
    words[1, :channels] = np.broadcast_to(np.asarray(multiplier, np.int64).reshape(-1), (channels,))
    words[2, :channels] = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (channels,))
    return np.ascontiguousarray(words.reshape(3, blocks, 4).transpose(1, 0, 2).reshape(-1).astype(np.int32))


def dot_constants(node: Node, params) -> dict[int, np.ndarray]:
    """Quad rows and bias'; a conv through im2col (not a pointwise conv read in place) takes
    bias' packed with its multipliers and shifts (:func:`packed_scales`)."""
    rows = weight_rows(node)
    bias = folded_bias(node, params.input_offset, rows)
    if node.op == "Conv" and not _pointwise_in_place(node):
        bias = packed_scales(bias, params.output_multiplier, params.output_shift)
    return {1: quad_rows(rows), 2: bias}


MVE_CONV = register(KernelVariant(
    "mve-conv", ("Conv",), "int8 conv, im2col + 2x4 VMLADAVA blocks (Helium)", rank=RANK, runs_on=has_mve,
    core_requirement=MVE_CORES, accepts=conv_accepts, scratch_bytes=conv_scratch_bytes, overlap="proved",
    overlap_proof=conv_overlap, function_suffix="_mve_prechecked",
    sources=("mve/conv_mve.c", "mve/gemm_mve.c"), headers=HEADERS, prepare_constants=dot_constants,
    scratch_check=scratch_call("mcu_conv2d_s8_mve_scratch_size")))


def depthwise_accepts(node: Node) -> str | None:
    if not is_depthwise(node):
        return "not a depthwise convolution"
    if node.inputs[1].shape[0] != node.inputs[0].shape[3]:
        return f"depth multiplier {node.inputs[1].shape[0] // node.inputs[0].shape[3]}: multiplier 1 only"
    return int8_refusal(node) or params_or_refusal(node)[1] or scratch_refusal(node, depthwise_scratch_bytes(node))


BAND_ROWS = 16   # MCU_DW_BAND_ROWS of depthwise_mve.c


def depthwise_constants(node: Node, params) -> dict[int, np.ndarray]:
    """Depthwise weights ``[C, kH, kW, 1]`` -> "group major" ``[G][kH*kW][8]`` (G = ceil(C/8),
    tail channels 0); the bias input -> ``[G][24]`` int32: bias', multipliers, shifts of the
    group, each as its 4 even then 4 odd channels (the lanes of VMULLB / VMULLT; tail
    channels 0, 0, -1), so that one vector load fetches each."""
    rows = weight_rows(node)   # [C, kH*kW]
    channels, taps = rows.shape
    groups = -(-channels // 8)
    padded = np.zeros((groups * 8, taps), dtype=np.int8)
    padded[:channels] = rows
    weights = padded.reshape(groups, 8, taps).transpose(0, 2, 1)
    words = np.zeros((3, groups * 8), dtype=np.int64)   # bias', multipliers, shifts
    words[2] = -1
    words[0, :channels] = folded_bias(node, params.input_offset, rows)
    words[1, :channels] = np.broadcast_to(np.asarray(params.output_multiplier, np.int64).reshape(-1), (channels,))
    words[2, :channels] = np.broadcast_to(np.asarray(params.output_shift, np.int64).reshape(-1), (channels,))
    blocks = words.reshape(3, groups, 4, 2).transpose(1, 0, 3, 2)   # [G][word][even / odd][4]
    bias = blocks.astype(np.int32)
    return {1: np.ascontiguousarray(weights.reshape(-1)), 2: np.ascontiguousarray(bias.reshape(-1))}


def _has_band(node: Node) -> bool:
    return tuple(node.attrs["dilations"]) == (1, 1) and node.inputs[1].shape[1] <= BAND_ROWS


def _band_bytes(node: Node, channels: int | None = None) -> int:
    """kH rows of ``(W_out - 1) * stride + kW`` band columns of 8 channels, every group (of
    ``channels``, default all): the header's ``MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES``
    (what the C scratch_size returns for a band shape)."""
    kernel_h, kernel_w = node.inputs[1].shape[1:3]
    return scratch_formula("MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES", out_w=node.outputs[0].shape[2],
                           stride_w=node.attrs["strides"][1], kernel_h=kernel_h, kernel_w=kernel_w,
                           in_c=node.inputs[0].shape[3] if channels is None else channels)


def _band_fits(node: Node) -> bool:
    """The band path in one pass: dilation 1 and the whole band (every group) within the
    scratch budget."""
    return _has_band(node) and scratch_refusal(node, _band_bytes(node)) is None


def band_chunk_groups(node: Node) -> int:
    """Groups per pass of the band path: every group when the whole band fits the budget,
    else as many as fit (the small-image layers, e.g. MobileNetV2's 4x4x328, whose band is
    above (input + output) / 2: passes over group chunks), 0 for the pixel path (dilation
    > 1, or not even one group's band fits). The C kernel takes ``ctx->size / group band``."""
    if not _has_band(node):
        return 0
    groups = -(-node.inputs[0].shape[3] // 8)
    return min(groups, scratch_budget(node) // _band_bytes(node, 8))


def depthwise_scratch_bytes(node: Node) -> int:
    """The band (``mcu_runtime_mve.h``) of one pass: every group when it fits the scratch
    budget, else the chunk of groups that fits; none for the pixel path. The C function
    returns the whole band for every band shape, and the kernel takes as many groups per
    pass as its context holds (the pixel path below one group)."""
    return _band_bytes(node, 8) * band_chunk_groups(node)


PIXEL_ORDER_PROOF = conv_row_proof(reads_first=False)


def depthwise_overlap(node: Node, value) -> int | str:
    """The distance the plan is given, both paths: the pixel path's (pixel units, each group
    stored before the next group's reads: the model of conv_row_proof), the stricter rule of
    the kernel before the band path. It is safe for the band path too, whose reads of each
    output row all come before that row's stores (:func:`band_overlap`, never larger). The
    band path's own, smaller distance (often 0) is the variant's ``overlap_alternatives``:
    ``plan/paired_greedy`` is not monotone in the distances (with the band distance everywhere
    MobileNetV1-VWW's M55 arena grew from 41,280 B to 48,432 B), so plan/overlap_choice.py plans
    both per node and keeps the smaller. Passes over
    group chunks (:func:`band_chunk_groups`) read the whole input again per pass: the output
    (its bytes) below the input."""
    refusal = nhwc_check(node, value)
    if refusal:
        return refusal
    groups = band_chunk_groups(node)
    if 0 < groups < -(-node.inputs[0].shape[3] // 8):
        # passes over group chunks: the last pass reads the input from its first row after the
        # first pass has stored its groups of every pixel, so the output lies below the input.
        pixel_order = PIXEL_ORDER_PROOF(node, value)
        return pixel_order if isinstance(pixel_order, str) else max(int(node.outputs[0].nbytes), pixel_order)
    return PIXEL_ORDER_PROOF(node, value)


def band_overlap(node: Node, value) -> int | str:
    """The band path's exact distance: before its first store, output row y has copied every
    input row up to y*sh - pt + kH - 1 into the ring, and rows in the ring are never read
    from the input again, so after row y only input rows >= y*sh - pt + kH are read:

        distance = max(0, max_y ((y+1) * W_out * C_out - max(0, y*sh - pt + kH) * W * C))

    (rows past the input read nothing); :func:`depthwise_overlap` when the band does not fit in
    one pass (group-chunk passes re-read the whole input)."""
    refusal = nhwc_check(node, value)
    if refusal or not _band_fits(node):        # chunked passes or the pixel path: their own rule
        return refusal or depthwise_overlap(node, value)
    _, height, width, channels = value.shape
    _, out_height, out_width, out_channels = node.outputs[0].shape
    rows = np.arange(out_height, dtype=np.int64) * node.attrs["strides"][0] - node.attrs["pads"][0] \
        + node.inputs[1].shape[1]
    read_low = np.where(rows < height, np.maximum(rows, 0) * width * channels * value.dtype.itemsize, NO_READ)
    write_end = (np.arange(out_height, dtype=np.int64) + 1) * out_width * out_channels * node.outputs[0].dtype.itemsize
    return max(0, int(np.max(write_end - read_low)))


MVE_DEPTHWISE = register(KernelVariant(
    "mve-depthwise", ("Conv",), "int8 depthwise conv (multiplier 1), 8 channels per vector, VMULLB/T (Helium)",
    rank=RANK, runs_on=has_mve, core_requirement=MVE_CORES, accepts=depthwise_accepts,
    scratch_bytes=depthwise_scratch_bytes, overlap="proved",
    overlap_proof=depthwise_overlap,   # safe on both paths; the exact one as the alternative
    overlap_alternatives=(band_overlap,),
    function_suffix="_mve",
    sources=("mve/depthwise_mve.c",), headers=HEADERS, prepare_constants=depthwise_constants))
# No scratch_check: the scratch is optional (a context below the band runs the pixel path), and
# a band above the scratch budget is planned as 0 bytes while the C function returns the band.


def fc_accepts(node: Node) -> str | None:
    refusal = int8_refusal(node) or params_or_refusal(node)[1] or scratch_refusal(node, fc_scratch_bytes(node))
    if refusal:
        return refusal
    if prepared_params(node).weights_offset != 0:
        return "per-tensor weights with a non-zero zero point (weights_offset != 0)"
    return None


def fc_scratch_bytes(node: Node) -> int:
    depth = node.inputs[0].shape[-1]
    return scratch_formula("MCU_FULLY_CONNECTED_S8_MVE_SCRATCH_BYTES", depth=depth)


MVE_FULLY_CONNECTED = register(KernelVariant(
    "mve-fully-connected", ("Gemm",), "int8 fully connected, 2x4 VMLADAVA blocks (Helium)", rank=RANK,
    runs_on=has_mve, core_requirement=MVE_CORES, accepts=fc_accepts, scratch_bytes=fc_scratch_bytes,
    overlap="none", function_suffix="_mve_prechecked", sources=("mve/fully_connected_mve.c", "mve/gemm_mve.c"),
    headers=HEADERS, prepare_constants=dot_constants,
    scratch_check=scratch_call("mcu_fully_connected_s8_mve_scratch_size")))


def elementwise_accepts(node: Node) -> str | None:
    refusal = int8_refusal(node)
    if refusal:
        return refusal
    if any(v is None or v.shape != node.outputs[0].shape or str(v.dtype) != "int8" for v in node.inputs[:2]):
        return "broadcast or non-int8 operand: the reference kernel broadcasts"
    return params_or_refusal(node)[1]


MVE_ELEMENTWISE = register(KernelVariant(
    "mve-elementwise", ("Add", "Mul"), "int8 Add / Mul without broadcasting, 4 elements per vector (Helium)",
    rank=RANK, runs_on=has_mve, core_requirement=MVE_CORES, accepts=elementwise_accepts, overlap="reference",
    function_suffix="_mve", sources=("mve/elementwise_mve.c",), headers=HEADERS))


def pool_accepts(node: Node) -> str | None:
    refusal = int8_refusal(node)
    if refusal:
        return refusal
    if tuple(node.attrs.get("dilations", (1, 1))) != (1, 1):
        return "dilated pooling"
    if node.op == "AveragePool" and int(np.prod(node.attrs["kernel_shape"])) > 256:
        return "average window above 256 elements (16-bit sums)"
    return params_or_refusal(node)[1]


MVE_POOL = register(KernelVariant(
    "mve-pool", ("AveragePool", "MaxPool"), "int8 average (8 channels, 16-bit sums) / max (16 channels, VMAX) "
    "pooling (Helium)", rank=RANK, runs_on=has_mve, core_requirement=MVE_CORES, accepts=pool_accepts,
    overlap="reference", function_suffix="_mve", sources=("mve/pool_mve.c",), headers=HEADERS))
