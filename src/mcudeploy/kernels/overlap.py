"""Overlap proofs: how far below its input an op's output may start, from the C kernels'
real access order (runtime/src/*.c), so that no byte is overwritten before its last read.

Model. A kernel runs over *units* u = 0, 1, ... in the order it writes them (an element for
elementwise kernels, an output pixel with all its channels for conv / pool, which loop
``n, y, x, o`` with ``index++`` stores). With the output based ``distance`` bytes below the
input (``out_base = in_base - distance``), the write of unit u ends at
``out_base + write_end(u)`` and every read still to come is at or above
``in_base + read_low(u)``, where ``read_low(u)`` is the lowest input byte read by units
``>= u`` (units ``> u`` when a unit reads all its input before its first write). The
kernel is safe when ``write_end(u) - distance <= read_low(u)`` for every u, so

    distance = max(0, max_u (write_end(u) - read_low(u)))

and any output offset ``<= in_offset - distance`` is safe (lower is always safe: writes only
move further below the reads). ``distance = 0`` is full in-place reuse. The input must be
dead after the op (its last reader), which :mod:`.reuse` checks.

Each proof is a named function registered per op; an op without one gets no overlap.
Only NHWC (the layout of the C kernels) and batch 1 are proved.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..ir import Node, Value

ProofFunction = Callable[[Node, Value], "int | str"]
PROOFS: dict[str, ProofFunction] = {}

# Ops with an elementwise C kernel (quantize.c, smooth_step.c, hard_swish.c, leaky_relu.c).
# Relu / Clip have none (they are fused into the producer's clamp), so nothing is proved for them.
UNARY_ELEMENTWISE = ("QuantizeLinear", "DequantizeLinear", "Sigmoid", "Tanh", "HardSwish", "LeakyRelu")


def proof(*ops: str) -> Callable[[ProofFunction], ProofFunction]:
    """Register the overlap proof of ``ops`` (returns the distance in bytes, or a refusal)."""
    def register(function: ProofFunction) -> ProofFunction:
        for op in ops:
            PROOFS[op] = function
        return function
    return register


def overlap_distance(node: Node, value: Value) -> int | str:
    """The proved distance for ``node`` writing over its input ``value``, or why not."""
    if node.op not in PROOFS:
        return f"no access-order proof for {node.op}"
    return PROOFS[node.op](node, value)


def _elementwise_distance(count: int, in_itemsize: int, out_itemsize: int) -> int:
    """Element k is read, then written: write_end(k) = (k+1)*out, read_low(>k) = (k+1)*in."""
    return max(0, (count - 1) * (out_itemsize - in_itemsize))


@proof(*UNARY_ELEMENTWISE, "Softmax")
def unary_proof(node: Node, value: Value) -> int | str:
    """Element i of the output is written right after element i of the input is read (a
    softmax row is scanned twice before its writes start, so the same holds per row)."""
    output = node.outputs[0]
    if output.size != value.size:
        return "output and input element counts differ"
    if node.op == "Softmax" and output.dtype.itemsize != value.dtype.itemsize:
        return "softmax to a wider type writes ahead of its reads"
    return _elementwise_distance(value.size, value.dtype.itemsize, output.dtype.itemsize)


@proof("Add", "Sub", "Mul")
def binary_proof(node: Node, value: Value) -> int | str:
    """As unary, for the operand that is not broadcast (same shape as the output)."""
    output = node.outputs[0]
    if value.shape != output.shape:
        return "the operand is broadcast: its elements are read more than once"
    if sum(1 for v in node.inputs if v is value) > 1:
        return "the operand is read twice per element"
    return _elementwise_distance(value.size, value.dtype.itemsize, output.dtype.itemsize)


def nhwc_check(node: Node, value: Value) -> str | None:
    if node.attrs.get("layout", "NHWC") != "NHWC":
        return f"layout {node.attrs.get('layout')}: the runtime's access order is proved for NHWC only"
    if value.rank != 4 or value.shape[0] != 1 or node.input(0) is not value:
        return "not a batch-1 rank-4 data input"
    return None


def _first_read(out_positions: np.ndarray, stride: int, pad: int, dilation: int, kernel: int,
                size: int) -> tuple[np.ndarray, np.ndarray]:
    """First input row (or column) each output row reads, and whether it reads any."""
    start = out_positions * stride - pad
    first_tap = np.where(start >= 0, 0, (-start + dilation - 1) // dilation)
    row = start + first_tap * dilation
    valid = (first_tap < kernel) & (row < size)
    return np.clip(row, 0, size - 1), valid


NO_READ = np.iinfo(np.int64).max // 4   # the first byte of a pixel that reads nothing


def first_read_bytes(value: Value, output: Value, stride: tuple, pad: tuple, dilation: tuple,
                     kernel: tuple) -> np.ndarray:
    """The lowest input byte each output pixel of a window kernel reads (NHWC, batch 1), in
    output order; :data:`NO_READ` for a pixel whose window lies in the padding."""
    _, height, width, channels = value.shape
    _, out_height, out_width, _ = output.shape
    rows, rows_valid = _first_read(np.arange(out_height), stride[0], pad[0], dilation[0], kernel[0], height)
    cols, cols_valid = _first_read(np.arange(out_width), stride[1], pad[1], dilation[1], kernel[1], width)
    low = (rows[:, None] * width + cols[None, :]) * channels * value.dtype.itemsize
    return np.where(rows_valid[:, None] & cols_valid[None, :], low, NO_READ).astype(np.int64).reshape(-1)


def window_distance(value: Value, output: Value, stride: tuple, pad: tuple, dilation: tuple,
                    kernel: tuple) -> int:
    """Pixel-unit distance for a window kernel (conv, depthwise, pool) over NHWC, batch 1.
    Within a pixel, output channel o is stored before channel o+1's reads, so a pixel's own
    reads count: read_low(p) = min over pixels q >= p of the first byte q reads."""
    out_channels = output.shape[3]
    low = first_read_bytes(value, output, stride, pad, dilation, kernel)
    suffix_low = np.minimum.accumulate(low[::-1])[::-1]
    write_end = (np.arange(low.size, dtype=np.int64) + 1) * out_channels * output.dtype.itemsize
    return max(0, int(np.max(write_end - suffix_low)))


@proof("Conv")
def conv_proof(node: Node, value: Value) -> int | str:
    """mcu_conv2d / mcu_depthwise_conv2d: loops n, y, x, o; each o reads its window, then stores."""
    refusal = nhwc_check(node, value)
    if refusal:
        return refusal
    weights = node.inputs[1]
    kernel = tuple(weights.shape[1:3])
    attrs = node.attrs
    return window_distance(value, node.outputs[0], attrs["strides"], attrs["pads"][:2], attrs["dilations"],
                           kernel)


@proof("MaxPool", "AveragePool")
def pool_proof(node: Node, value: Value) -> int | str:
    """mcu_max_pool / mcu_avg_pool: loops n, y, x, c; each c reads its window, then stores."""
    refusal = nhwc_check(node, value)
    if refusal:
        return refusal
    attrs = node.attrs
    if tuple(attrs["dilations"]) != (1, 1):
        return "dilated pooling has no C kernel"
    return window_distance(value, node.outputs[0], attrs["strides"], attrs["pads"][:2], (1, 1),
                           tuple(attrs["kernel_shape"]))


@proof("Concat")
def concat_proof(node: Node, value: Value) -> int | str:
    """mcu_concat: for each of B outer blocks, the inputs in order, one memmove (or a forward
    element loop when requantizing: element k read, then written) of input i's block of L
    bytes into the output block of O bytes, at byte ``prefix`` (the earlier inputs' blocks)
    inside it. A memmove may overlap its own source, so the only rule is that no write reaches
    bytes of input i still to be read by a later copy: the copy of input j in block b ends at
    ``b O + prefix_j + L_j``, while input i's reads still to come start at ``b L`` (j < i) or
    ``(b + 1) L`` (j >= i; none after input i's last block). The tightest is input i - 1 in
    the last block:

        distance = (B - 1)(O - L) + prefix

    (with memcpy a copy could not overlap its own source: that cost L more, the 32 B of the
    U-Net 512 hyperRAM arena)."""
    output = node.outputs[0]
    if sum(1 for v in node.inputs if v is value) != 1:
        return "the input appears more than once"
    if value.dtype.itemsize != output.dtype.itemsize:
        return "input and output element sizes differ"
    axis = node.attrs["axis"] % output.rank
    blocks = math.prod(output.shape[:axis])
    inner = math.prod(output.shape[axis + 1:]) * output.dtype.itemsize
    length, block = value.shape[axis] * inner, output.shape[axis] * inner
    index = next(i for i, v in enumerate(node.inputs) if v is value)
    prefix = sum(v.shape[axis] for v in node.inputs[:index]) * inner
    return (blocks - 1) * (block - length) + prefix
