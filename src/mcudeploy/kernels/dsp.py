"""Kernel variants for Cortex-M cores with the DSP extension (Cortex-M4, M7, M33, M55):
``runtime/src/dsp/*.c``, declared in ``runtime/include/mcu_runtime_dsp.h``, function names
``<reference name>_dsp``. Each is bit-exact with the reference kernel it replaces.

Variant: technique; scratch; overlap rule (how the planner may share bytes with the input).

* ``dsp-conv``: im2col to q15 (SXTAB16 adds the input offset; C % 4 != 0, the first layers:
  kernel rows inside the input copied as runs of kW*C bytes); K >= 64: 4 pixels x 1 output
  channel (LDM of the columns, one weight word widened for four pixels: 25 instructions per
  32 MACs), scratch 8*Kp bytes, or 3 pixels (6*Kp) when only that fits the budget of
  :func:`.prepared.scratch_budget`; otherwise 2 pixels x 2 output channels, scratch 4*Kp;
  SMLAD; without an activation clamp a "saturating" output stage (the output offset in the
  rounding term, SSAT); +Kp scratch bytes when C % 4 != 0; blocks of 4 / 2 pixels that
  read their fields first (:func:`.overlap_blocked.conv_block_proof`).
* ``dsp-depthwise``: 4 channels per word, SXTAB16 + SMLABB / SMLATT, by output rows (scales
  decoded once per row and group); 3x3 with dilation 1 and borders of one missing column:
  each output row (two or three kernel rows in range) through blocks of its taps in range in
  asm (left border pixel, interior, right border pixel: no per-tap bound checks), the input
  offset folded into per-row biases (bias + input_offset * the sum of the taps' weights, per
  column class); a "simple" output stage in asm (the output offset folded into the rounding
  term, one word store, bytewise clamp); no scratch; units of one output row, reads not first.
* ``dsp-fully-connected``: the input row read in place, 1 row x 4 units (the input word
  widened once for four weight rows), SMLAD; no scratch; no overlap. The C argument checks
  and the "every unit simple" test are made here, at generation time: the call goes to
  ``mcu_fully_connected_s8_dsp_simple`` or ``_prechecked`` (:func:`fc_function_suffix`).
* ``dsp-elementwise``: Add / Mul without broadcasting, 4 elements per word, SMMULR; no
  scratch; the reference proof (element i written after element i is read).
* ``dsp-pool``: average (SXTAB16 sums) and max (SSUB8 + SEL) over 4 channels per word; no
  scratch; the reference proof.

Offline preparation (``prepare_constants``): conv / fully connected weight rows padded to
``Kp = ceil4(K)``, conv rows of 3- and 4-pixel blocks left plain (:func:`plain_rows`), the others
interleaved by pairs of output channels (:func:`paired_rows`; fully connected: by fours,
:func:`quad_rows`);
depthwise weights grouped by four channels, tap by tap (:func:`depthwise_groups`).

The requantization uses SMMULR where a channel's accumulators provably stay below 2^30
after the left shift (decided per channel in C from its bias and K), and TFLite's own
64-bit form elsewhere (``runtime/src/dsp/mcu_dsp_internal.h``): exact for every input.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .catalogue import register
from .overlap_blocked import conv_block_proof, conv_row_proof
from .prepared import (
    bias_values,
    int8_refusal,
    is_depthwise,
    params_or_refusal,
    prepared_params,
    scratch_call,
    scratch_refusal,
    weight_rows,
)
from .scratch_formula import scratch_formula
from .variant import KernelVariant

RANK = 10
DSP_CORES = "the DSP extension (Cortex-M4 / M7 / M33 / M55)"
HEADERS = ("include/mcu_runtime_dsp.h", "src/mcu_variants.h", "src/dsp/mcu_dsp_simd.h",
           "src/dsp/mcu_dsp_internal.h", "src/dsp/mcu_dsp_dot.h", "src/dsp/mcu_dsp_gemm.h",
           "src/dsp/mcu_dsp_depthwise.h")


def has_dsp(core) -> bool:
    return bool(core.dsp)


def row_length(depth: int) -> int:
    return (depth + 3) // 4 * 4


def paired_rows(rows: np.ndarray) -> np.ndarray:
    """``[O, K]`` int8 rows -> the "paired rows" layout of ``mcu_runtime_dsp.h``, flat, ``O * Kp``."""
    count, depth = rows.shape
    padded = np.zeros((count, row_length(depth)), dtype=np.int8)
    padded[:, :depth] = rows
    pairs = count // 2 * 2
    groups = padded[:pairs].reshape(pairs // 2, 2, padded.shape[1] // 4, 4).transpose(0, 2, 1, 3)
    return np.concatenate([groups.reshape(-1), padded[pairs:].reshape(-1)])


def quad_rows(rows: np.ndarray) -> np.ndarray:
    """``[N, K]`` int8 rows -> the "quad rows" layout of ``mcu_runtime_dsp.h``, flat, ``N * Kp``:
    blocks of four rows interleaved by groups of four k, the ``N mod 4`` last rows paired."""
    count, depth = rows.shape
    padded = np.zeros((count, row_length(depth)), dtype=np.int8)
    padded[:, :depth] = rows
    quads = count // 4 * 4
    groups = padded[:quads].reshape(quads // 4, 4, padded.shape[1] // 4, 4).transpose(0, 2, 1, 3)
    return np.concatenate([groups.reshape(-1), paired_rows(padded[quads:])])


def fc_constants(node: Node, params) -> dict[int, np.ndarray]:
    return {1: quad_rows(weight_rows(node))}


def _dot_refusal(node: Node) -> str | None:
    """Why a dot-product variant refuses the node, or None."""
    return int8_refusal(node) or params_or_refusal(node)[1]


def conv_accepts(node: Node) -> str | None:
    if node.attrs.get("group", 1) != 1:
        return f"group {node.attrs.get('group')}: grouped and depthwise convolutions have their own kernels"
    return _dot_refusal(node) or scratch_refusal(node, conv_scratch_bytes(node))


def _conv_sizes(node: Node) -> dict[str, int]:
    """The arguments of the conv's formula macros (``mcu_runtime_dsp.h``)."""
    return {"depth": int(np.prod(node.inputs[1].shape[1:])), "in_c": node.inputs[0].shape[3],
            "in_bytes": int(np.prod(node.inputs[0].shape)), "out_bytes": int(np.prod(node.outputs[0].shape))}


def conv_scratch_bytes(node: Node) -> int:
    return scratch_formula("MCU_CONV2D_S8_DSP_SCRATCH_BYTES", **_conv_sizes(node))


def plain_rows(rows: np.ndarray) -> np.ndarray:
    """``[O, K]`` int8 rows -> the "quad" conv layout of ``mcu_runtime_dsp.h``: each row
    zero-padded to ``Kp``, flat, ``O * Kp``."""
    padded = np.zeros((rows.shape[0], row_length(rows.shape[1])), dtype=np.int8)
    padded[:, :rows.shape[1]] = rows
    return padded.reshape(-1)


def conv_block(node: Node) -> int:
    """The output pixels per block the C kernel takes for this conv: the header's own rule,
    ``MCU_CONV2D_S8_DSP_BLOCK``: 4 (quad) or 3 (triple) x 1 output channel when K >= 64 and
    their scratch fits the budget of :func:`.prepared.scratch_budget`, else 2 x 2 channels."""
    return scratch_formula("MCU_CONV2D_S8_DSP_BLOCK", **_conv_sizes(node))


def conv_constants(node: Node, params) -> dict[int, np.ndarray]:
    rows = weight_rows(node)
    return {1: plain_rows(rows) if conv_block(node) > 2 else paired_rows(rows)}


def depthwise_groups(weights: np.ndarray) -> np.ndarray:
    """Depthwise weights ``[C, kH, kW, 1]`` -> the "depthwise groups" layout of
    ``mcu_runtime_dsp.h``, flat, ``C * kH * kW`` bytes."""
    channels = weights.shape[0]
    taps = weights.reshape(channels, -1)
    whole = channels // 4 * 4
    groups = taps[:whole].reshape(channels // 4, 4, taps.shape[1]).transpose(0, 2, 1)
    return np.ascontiguousarray(np.concatenate([groups.reshape(-1), taps[whole:].T.reshape(-1)]), dtype=np.int8)


def depthwise_accepts(node: Node) -> str | None:
    if not is_depthwise(node):
        return "not a depthwise convolution"
    if node.inputs[1].shape[0] != node.inputs[0].shape[3]:
        return f"depth multiplier {node.inputs[1].shape[0] // node.inputs[0].shape[3]}: multiplier 1 only"
    return _dot_refusal(node)


def depthwise_constants(node: Node, params) -> dict[int, np.ndarray]:
    weights = node.inputs[1].const
    assert weights is not None  # int8_refusal accepts constant weights only
    return {1: depthwise_groups(weights)}


def conv_blocks_proof(node: Node, value) -> int | str:
    """The overlap proof of the conv's blocks (:func:`conv_block` pixels), each reading its
    fields before its first store."""
    return conv_block_proof(conv_block(node), reads_first=True)(node, value)


DSP_CONV = register(KernelVariant(
    "dsp-conv", ("Conv",), "int8 conv, im2col to q15 + 2x2 SMLAD blocks (DSP extension)", rank=RANK,
    runs_on=has_dsp, core_requirement=DSP_CORES,
    accepts=conv_accepts, scratch_bytes=conv_scratch_bytes, overlap="proved",
    overlap_proof=conv_blocks_proof, function_suffix="_dsp",
    sources=("dsp/conv_dsp.c", "dsp/gemm_dsp.c", "dsp/gemm_quad_dsp.c"), headers=HEADERS, prepare_constants=conv_constants,
    scratch_check=scratch_call("mcu_conv2d_s8_dsp_scratch_size")))

DSP_DEPTHWISE = register(KernelVariant(
    "dsp-depthwise", ("Conv",), "int8 depthwise conv (multiplier 1), 4 channels per word, SMLABB/SMLATT "
    "(DSP extension)", rank=RANK, runs_on=has_dsp, core_requirement=DSP_CORES, accepts=depthwise_accepts,
    overlap="proved", overlap_proof=conv_row_proof(reads_first=False), function_suffix="_dsp",
    sources=("dsp/depthwise_dsp.c",), headers=HEADERS,
    prepare_constants=depthwise_constants))


def fc_accepts(node: Node) -> str | None:
    refusal = _dot_refusal(node)
    if refusal:
        return refusal
    if prepared_params(node).weights_offset != 0:
        return "per-tensor weights with a non-zero zero point (weights_offset != 0)"
    return None


def fc_function_suffix(node: Node) -> str:
    """``_dsp_simple`` when every unit is "simple" (the test of ``mcu_dsp_all_simple``, done
    here once: shift <= -1 and |bias| + K * 128 * 255 < 2^30), else ``_dsp_prechecked``;
    both skip the C argument checks, which the code generator's own checks make redundant."""
    params = prepared_params(node)
    rows = weight_rows(node)
    reach = rows.shape[1] * 128 * 255 if rows.shape[1] < 32768 else 2**31 - 1
    bias = np.abs(bias_values(node, rows.shape[0]))
    simple = reach < 2**30 and bool(np.all(np.asarray(params.output_shift) <= -1)) and bool(
        np.all(bias < 2**30 - reach))
    return "_dsp_simple" if simple else "_dsp_prechecked"


DSP_FULLY_CONNECTED = register(KernelVariant(
    "dsp-fully-connected", ("Gemm",), "int8 fully connected, input read in place, 1 row x 4 units SMLAD "
    "(DSP extension)", rank=RANK, runs_on=has_dsp, core_requirement=DSP_CORES, accepts=fc_accepts,
    overlap="none", function_suffix="_dsp_prechecked", function_suffix_of=fc_function_suffix,
    sources=("dsp/fully_connected_dsp.c",), headers=HEADERS,
    prepare_constants=fc_constants))


def elementwise_accepts(node: Node) -> str | None:
    refusal = int8_refusal(node)
    if refusal:
        return refusal
    if any(v is None or v.shape != node.outputs[0].shape or str(v.dtype) != "int8" for v in node.inputs[:2]):
        return "broadcast or non-int8 operand: the reference kernel broadcasts"
    params, refusal = params_or_refusal(node)
    if refusal:
        return refusal
    if node.op == "Add" and params.left_shift > 21:
        return f"left shift {params.left_shift} > 21"
    if node.op == "Mul" and params.output_shift > 13:
        return f"output shift {params.output_shift} > 13"
    return None


DSP_ELEMENTWISE = register(KernelVariant(
    "dsp-elementwise", ("Add", "Mul"), "int8 Add / Mul without broadcasting, 4 elements per word, SMMULR "
    "(DSP extension)", rank=RANK, runs_on=has_dsp, core_requirement=DSP_CORES, accepts=elementwise_accepts,
    overlap="reference", function_suffix="_dsp", sources=("dsp/elementwise_dsp.c",), headers=HEADERS))


def pool_accepts(node: Node) -> str | None:
    refusal = int8_refusal(node)
    if refusal:
        return refusal
    if tuple(node.attrs.get("dilations", (1, 1))) != (1, 1):
        return "dilated pooling"
    return params_or_refusal(node)[1]


DSP_POOL = register(KernelVariant(
    "dsp-pool", ("AveragePool", "MaxPool"), "int8 average / max pooling, 4 channels per word "
    "(SXTAB16 sums, SSUB8 + SEL maxima; DSP extension)", rank=RANK, runs_on=has_dsp,
    core_requirement=DSP_CORES, accepts=pool_accepts, overlap="reference", function_suffix="_dsp",
    sources=("dsp/pool_dsp.c",), headers=HEADERS))
