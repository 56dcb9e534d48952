"""16x8 kernel variants (int16 activations, int8 weights, int64 bias) for the DSP extension
(``dsp-*-s16``: Cortex-M4 / M7 / M33 / M55) and Helium (``mve-*-s16``: Cortex-M55 / M85):
``runtime/src/dsp/*_s16_dsp.c``, ``runtime/src/mve/*_s16_mve.c``, declared in
``runtime/include/mcu_runtime_s16.h``. Each is bit-exact with the reference 16x8 kernel it
replaces (TFLite's 16x8 arithmetic: zero points 0, int64 accumulator, ``mbqm64``).

Exactness: int32 partial sums of at most 504 products (``|x * w| <= 2^22``) summed in
int64, so every K is exact; depthwise keeps int32 sums and takes <= 504 taps.

Variant: technique; scratch; overlap rule.

* ``dsp-conv-s16`` / ``mve-conv-s16``: int16 im2col of two pixels, 2x2 SMLAD blocks
  (DSP) / 2x4 VMLADAVA.S16 blocks (MVE); scratch two columns ``4 * K`` bytes, none for a
  pointwise 1x1 (read in place); blocks of 2 pixels, reads first unless read in place.
* ``dsp-depthwise-s16`` / ``mve-depthwise-s16``: 4 channels per step (SMLABB / SMLATT;
  int32 lanes VMUL + VADD); no scratch; units of one output row, reads not first.
* ``dsp-fully-connected-s16`` / ``mve-fully-connected-s16``: the conv's blocks with the
  input rows as pixels, read in place; no scratch; no overlap.
* ``dsp-add-s16`` / ``mve-add-s16``: Add without broadcasting (SMMULR input stage; VQRDMULH
  + VRSHL, 4 elements per vector); no scratch; the reference proof.

Offline layouts (``prepare_constants``): DSP "s16 quad pairs" (:func:`s16_quad_pairs`), MVE
"s16 quad octets" (:func:`s16_quad_octets`), depthwise weights taps-major ``[kH*kW, C]``
(in "s16 quads" for DSP).
"""
from __future__ import annotations

import numpy as np

from ..ir import Node
from .catalogue import register
from .dsp import has_dsp
from .mve import has_mve
from .overlap_blocked import conv_block_proof, conv_row_proof
from .prepared import is_depthwise, params_or_refusal, scratch_call, scratch_refusal, weight_rows
from .scratch_formula import scratch_formula
from .variant import KernelVariant

CHUNK = 504        # products per exact int32 partial sum (runtime/src/mcu_s16_variants.h)
DSP_CORES = "the DSP extension (Cortex-M4 / M7 / M33 / M55)"
MVE_CORES = "the M-profile Vector Extension (Helium: Cortex-M55 / M85)"
COMMON_HEADERS = ("include/mcu_runtime_s16.h", "src/mcu_variants.h", "src/mcu_s16_variants.h")
DSP_HEADERS = COMMON_HEADERS + ("src/dsp/mcu_dsp_simd.h", "src/dsp/mcu_dsp_s16.h")
MVE_HEADERS = COMMON_HEADERS + ("src/mve/mcu_mve_simd.h", "src/mve/mcu_mve_s16.h")


def s16_quads(rows: np.ndarray) -> np.ndarray:
    """``[R, K]`` int8 rows -> "s16 quads" (``mcu_runtime_s16.h``): each group of four
    ``k = 4g..4g+3`` stored as ``(4g, 4g+2, 4g+1, 4g+3)``, the ``K % 4`` tail plain; flat."""
    count, depth = rows.shape
    whole = depth // 4 * 4
    groups = rows[:, :whole].reshape(count, -1, 4)[:, :, [0, 2, 1, 3]].reshape(count, whole)
    return np.ascontiguousarray(np.concatenate([groups, rows[:, whole:]], axis=1).reshape(-1), dtype=np.int8)


def s16_quad_pairs(rows: np.ndarray) -> np.ndarray:
    """``[O, K]`` int8 rows -> "s16 quad pairs" (``mcu_runtime_s16.h``): rows ``2q``, ``2q+1``
    in quads interleaved four bytes at a time, then their two tails; an odd last row in quads."""
    count, depth = rows.shape
    whole, pairs = depth // 4 * 4, count // 2 * 2
    quads = s16_quads(rows).reshape(count, depth)
    groups = quads[:pairs, :whole].reshape(pairs // 2, 2, whole // 4, 4).transpose(0, 2, 1, 3)
    heads = groups.reshape(pairs // 2, 2 * whole)
    tails = quads[:pairs, whole:].reshape(pairs // 2, 2 * (depth - whole))
    paired = np.concatenate([heads, tails], axis=1).reshape(-1)
    return np.ascontiguousarray(np.concatenate([paired, quads[pairs:].reshape(-1)]), dtype=np.int8)


def s16_quad_octets(rows: np.ndarray) -> np.ndarray:
    """``[O, K]`` int8 rows -> "s16 quad octets" (``mcu_mve_s16.h``): rows zero-padded to
    ``ceil8(K)`` and to a multiple of four, each block of four rows interleaved 8 bytes at
    a time (byte ``32g + 8r + i`` of a block = row ``r``, ``k = 8g + i``); flat."""
    count, depth = rows.shape
    padded = np.zeros((-(-count // 4) * 4, -(-depth // 8) * 8), dtype=np.int8)
    padded[:count, :depth] = rows
    blocks = padded.reshape(-1, 4, padded.shape[1] // 8, 8).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(blocks.reshape(-1), dtype=np.int8)


def s16_refusal(node: Node) -> str | None:
    """Why a 16x8 variant cannot run ``node`` (int16 data, zero points 0, constant int8
    weights and an int64 bias or none, NHWC, the int64 accumulator), or None."""
    if node.attrs.get("layout", "NHWC") != "NHWC":
        return f"layout {node.attrs.get('layout')}: the variants run NHWC"
    values = [node.inputs[0], node.outputs[0]]
    if any(str(v.dtype) != "int16" for v in values):
        return f"{values[0].dtype} -> {values[1].dtype}: the 16x8 variants take int16 activations"
    if node.op in ("Conv", "Gemm"):
        weights, bias = node.inputs[1], node.input(2) if len(node.inputs) > 2 else None
        if weights.const is None or str(weights.dtype) != "int8":
            return "weights are not a constant int8 tensor"
        if bias is not None and (bias.const is None or str(bias.dtype) != "int64"):
            return "bias is not a constant int64 tensor (16x8 with an int32 bias has no C kernel)"
    params, refusal = params_or_refusal(node)
    if refusal:
        return refusal
    if not getattr(params, "int64_accumulator", True):
        return "int32 accumulator (16x8 with an int32 bias)"
    offsets = [getattr(params, name, 0) for name in ("input_offset", "output_offset", "weights_offset",
                                                     "input1_offset", "input2_offset")]
    if any(offsets):
        return "non-zero zero points (16x8 takes symmetric int16 activations)"
    return None


def _conv_depth(node: Node) -> int:
    return int(np.prod(node.inputs[1].shape[1:]))


def pointwise_in_place(node: Node) -> bool:
    attrs, x, w, y = node.attrs, node.inputs[0], node.inputs[1], node.outputs[0]
    return (tuple(w.shape[1:3]) == (1, 1) and tuple(attrs["strides"]) == (1, 1) and not any(attrs["pads"])
            and x.shape[1:3] == y.shape[1:3])


def conv_scratch_bytes(node: Node) -> int:
    return 0 if pointwise_in_place(node) else scratch_formula("MCU_CONV2D_S16_SCRATCH_BYTES", depth=_conv_depth(node))


def conv_accepts(node: Node) -> str | None:
    if node.attrs.get("group", 1) != 1:
        return f"group {node.attrs.get('group')}: grouped and depthwise convolutions have their own kernels"
    return s16_refusal(node) or scratch_refusal(node, conv_scratch_bytes(node))


def conv_overlap(node: Node, value) -> int | str:
    """Blocks of two pixels: fields copied before the first store, unless read in place."""
    return conv_block_proof(2, reads_first=not pointwise_in_place(node))(node, value)


def depthwise_accepts(node: Node) -> str | None:
    if not is_depthwise(node):
        return "not a depthwise convolution"
    if node.inputs[1].shape[0] != node.inputs[0].shape[3]:
        return f"depth multiplier {node.inputs[1].shape[0] // node.inputs[0].shape[3]}: multiplier 1 only"
    if int(np.prod(node.inputs[1].shape[1:3])) > CHUNK:
        return f"more than {CHUNK} taps (int32 sums would not be exact)"
    return s16_refusal(node)


def dsp_rows(node: Node, params) -> dict[int, np.ndarray]:
    return {1: s16_quad_pairs(weight_rows(node))}


def dsp_depthwise(node: Node, params) -> dict[int, np.ndarray]:
    return {1: s16_quads(np.ascontiguousarray(weight_rows(node).T))}


def mve_rows(node: Node, params) -> dict[int, np.ndarray]:
    return {1: s16_quad_octets(weight_rows(node))}


def mve_depthwise(node: Node, params) -> dict[int, np.ndarray]:
    return {1: np.ascontiguousarray(weight_rows(node).T.reshape(-1), dtype=np.int8)}


def add_accepts(node: Node) -> str | None:
    if any(v is None or v.shape != node.outputs[0].shape or str(v.dtype) != "int16" for v in node.inputs[:2]):
        return "broadcast or non-int16 operand: the reference kernel broadcasts"
    refusal = s16_refusal(node)
    if refusal:
        return refusal
    params = params_or_refusal(node)[0]
    if params.left_shift != 15 or min(params.input1_shift, params.input2_shift, params.output_shift) < -31:
        return "left shift other than 15 or a right shift above 31"
    return None


def _family(prefix: str, rank: int, runs_on, cores: str, headers: tuple, rows, depthwise) -> None:
    """Register the four 16x8 variants of one family (``dsp`` / ``mve``)."""
    common = dict(rank=rank, runs_on=runs_on, core_requirement=cores, headers=headers,
                  function_suffix=f"_{prefix}")
    register(KernelVariant(
        f"{prefix}-conv-s16", ("Conv",), f"16x8 conv, int16 im2col + dot-product blocks ({prefix})",
        accepts=conv_accepts, scratch_bytes=conv_scratch_bytes, overlap="proved", overlap_proof=conv_overlap,
        sources=(f"{prefix}/conv_s16_{prefix}.c", f"{prefix}/gemm_s16_{prefix}.c"), prepare_constants=rows,
        scratch_check=scratch_call(f"mcu_conv2d_s16_{prefix}_scratch_size"), **common))
    register(KernelVariant(
        f"{prefix}-depthwise-s16", ("Conv",), f"16x8 depthwise conv (multiplier 1), 4 channels per step ({prefix})",
        accepts=depthwise_accepts, overlap="proved", overlap_proof=conv_row_proof(reads_first=False),
        sources=(f"{prefix}/depthwise_s16_{prefix}.c",), prepare_constants=depthwise, **common))
    register(KernelVariant(
        f"{prefix}-fully-connected-s16", ("Gemm",), f"16x8 fully connected, input rows in place ({prefix})",
        accepts=s16_refusal, overlap="none",
        sources=(f"{prefix}/fully_connected_s16_{prefix}.c", f"{prefix}/gemm_s16_{prefix}.c"),
        prepare_constants=rows, **common))
    register(KernelVariant(
        f"{prefix}-add-s16", ("Add",), f"16x8 Add without broadcasting ({prefix})", accepts=add_accepts,
        overlap="reference", sources=(f"{prefix}/add_s16_{prefix}.c",), **common))


_family("dsp", 10, has_dsp, DSP_CORES, DSP_HEADERS, dsp_rows, dsp_depthwise)
_family("mve", 20, has_mve, MVE_CORES, MVE_HEADERS, mve_rows, mve_depthwise)
