"""Kernel variants for Cortex-M cores with the M-profile Vector Extension (Helium: Cortex-M55,
M85): ``runtime/src/mve/*.c``, declared in ``runtime/include/mcu_runtime_mve.h``, function
names ``<reference name>_mve``. Each is bit-exact with the reference kernel it replaces.

Variant: technique; scratch; overlap rule. Ranked above the DSP variants (an M55 has both).

* ``mve-conv``: int8 im2col (MVE copies), 2 pixels x 4 output channels, VMLADAVA.S8, the
  input offset folded into the bias; scratch 2*Kp bytes (none for a pointwise 1x1 with
  C % 16 == 0, read in place); blocks of 2 pixels, read first unless read in place.
* ``mve-depthwise``: 8 channels per vector (16-bit lanes), VMULLB / VMULLT, by output rows,
  a zero-point-padded band of three input rows for 3x3 kernels, pixel pairs sharing the
  weight loads, offset folded; scratch the band (3x3 only); units of one output row.
* ``mve-fully-connected``: the conv's 2x4 blocks with rows as pixels; scratch 2*Kp when
  K % 16 != 0; no overlap.
* ``mve-elementwise``: Add / Mul without broadcasting, 4 elements per int32 vector; no
  scratch; the reference proof.
* ``mve-pool``: average (8 channels, 16-bit sums, windows <= 256) and max (16 channels,
  VMAX.S8); no scratch; the reference proof.

Offline preparation (``prepare_constants``): weight rows padded to ``Kp = ceil16(K)`` and
interleaved 16 bytes at a time by blocks of four output channels (:func:`quad_rows`); the
input offset folded into the bias (:func:`.prepared.folded_bias`). The requantization
(VQRDMULH, VRSHL with a sign fix-up) is exact for every int32 accumulator: no bound to check.
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .catalogue import register
from .overlap_blocked import conv_block_proof, conv_row_proof
from .prepared import (
    folded_bias,
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

RANK = 20   # above the DSP variants
MVE_CORES = "the M-profile Vector Extension (Helium: Cortex-M55 / M85)"
HEADERS = ("include/mcu_runtime_mve.h", "src/mcu_variants.h", "src/mve/mcu_mve_simd.h",
           "src/mve/mcu_mve_internal.h", "src/mve/mcu_mve_gemm.h")


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
    attrs, x, w, y = node.attrs, node.inputs[0], node.inputs[1], node.outputs[0]
    return (tuple(w.shape[1:3]) == (1, 1) and tuple(attrs["strides"]) == (1, 1) and not any(attrs["pads"])
            and x.shape[1:3] == y.shape[1:3] and x.shape[3] % 16 == 0)


def conv_overlap(node: Node, value) -> int | str:
    """Blocks of two pixels; an im2col block copies its fields before its first store, a
    pointwise block read in place stores its first channels while still reading its rows."""
    return conv_block_proof(2, reads_first=not _pointwise_in_place(node))(node, value)


def conv_scratch_bytes(node: Node) -> int:
    return scratch_formula("MCU_CONV2D_S8_MVE_SCRATCH_BYTES", depth=int(np.prod(node.inputs[1].shape[1:])),
                           pointwise=int(_pointwise_in_place(node)))


def dot_constants(node: Node, params) -> dict[int, np.ndarray]:
    rows = weight_rows(node)
    return {1: quad_rows(rows), 2: folded_bias(node, params.input_offset, rows)}


MVE_CONV = register(KernelVariant(
    "mve-conv", ("Conv",), "int8 conv, im2col + 2x4 VMLADAVA blocks (Helium)", rank=RANK, runs_on=has_mve,
    core_requirement=MVE_CORES, accepts=conv_accepts, scratch_bytes=conv_scratch_bytes, overlap="proved",
    overlap_proof=conv_overlap, function_suffix="_mve",
    sources=("mve/conv_mve.c", "mve/gemm_mve.c"), headers=HEADERS, prepare_constants=dot_constants,
    scratch_check=scratch_call("mcu_conv2d_s8_mve_scratch_size")))


def depthwise_accepts(node: Node) -> str | None:
    if not is_depthwise(node):
        return "not a depthwise convolution"
    if node.inputs[1].shape[0] != node.inputs[0].shape[3]:
        return f"depth multiplier {node.inputs[1].shape[0] // node.inputs[0].shape[3]}: multiplier 1 only"
    return int8_refusal(node) or params_or_refusal(node)[1] or scratch_refusal(node, depthwise_scratch_bytes(node))


def depthwise_constants(node: Node, params) -> dict[int, np.ndarray]:
    """Depthwise weights ``[C, kH, kW, 1]`` -> "taps major" ``[kH*kW, C]``; bias' folded."""
    rows = weight_rows(node)   # [C, kH*kW]
    return {1: np.ascontiguousarray(rows.T.reshape(-1), dtype=np.int8),
            2: folded_bias(node, params.input_offset, rows)}


def depthwise_scratch_bytes(node: Node) -> int:
    """The 3x3 path's padded band of three input rows (``mcu_runtime_mve.h``)."""
    attrs, x, y = node.attrs, node.inputs[0], node.outputs[0]
    if tuple(node.inputs[1].shape[1:3]) != (3, 3) or tuple(attrs["dilations"]) != (1, 1):
        return 0
    return scratch_formula("MCU_DEPTHWISE_CONV2D_S8_MVE_SCRATCH_BYTES", out_w=y.shape[2], stride_w=attrs["strides"][1],
                           in_w=x.shape[2], pad_left=attrs["pads"][1], in_c=x.shape[3])


MVE_DEPTHWISE = register(KernelVariant(
    "mve-depthwise", ("Conv",), "int8 depthwise conv (multiplier 1), 8 channels per vector, VMULLB/T (Helium)",
    rank=RANK, runs_on=has_mve, core_requirement=MVE_CORES, accepts=depthwise_accepts,
    scratch_bytes=depthwise_scratch_bytes, overlap="proved",
    overlap_proof=conv_row_proof(reads_first=False), function_suffix="_mve",
    sources=("mve/depthwise_mve.c",), headers=HEADERS, prepare_constants=depthwise_constants,
    scratch_check=scratch_call("mcu_depthwise_conv2d_s8_mve_scratch_size")))


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
    overlap="none", function_suffix="_mve", sources=("mve/fully_connected_mve.c", "mve/gemm_mve.c"),
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
