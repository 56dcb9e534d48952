"""Overlap proofs for the optimised window kernels, which write output pixels in blocks.

Model (the one of :mod:`.overlap`, with units of ``block`` consecutive output pixels): unit
``u`` covers pixels ``[u*block, min((u+1)*block, N))`` and writes all their channels; with
the output ``distance`` bytes below the input, the writes of unit ``u`` end at
``write_end(u) - distance`` and every read still to come starts at or above ``read_low(u)``:

* ``reads_first`` (the unit copies its whole receptive field into scratch before its
  first store, like the im2col convolutions): ``read_low(u)`` = the lowest byte read by
  units ``> u``;
* otherwise (stores interleaved with the unit's own reads, like the depthwise kernels that
  finish four channels of a pixel before reading the next four): units ``>= u``.

    distance = max(0, max_u (write_end(u) - read_low(u)))

Only NHWC and batch 1 are proved (:func:`.overlap.nhwc_check`).
"""
from __future__ import annotations

import numpy as np

from ..ir import Node, Value
from .overlap import NO_READ, first_read_bytes, nhwc_check


def blocked_window_distance(value: Value, output: Value, stride: tuple, pad: tuple, dilation: tuple,
                            kernel: tuple, block: int, reads_first: bool) -> int:
    """The distance of the module docstring for a window kernel with ``block``-pixel units."""
    low = first_read_bytes(value, output, stride, pad, dilation, kernel)
    pixels = low.size
    units = -(-pixels // block)
    padded = np.full(units * block, NO_READ, dtype=np.int64)
    padded[:pixels] = low
    unit_low = padded.reshape(units, block).min(axis=1)
    suffix = np.minimum.accumulate(unit_low[::-1])[::-1]
    if reads_first:
        suffix = np.append(suffix[1:], NO_READ)
    ends = np.minimum((np.arange(units, dtype=np.int64) + 1) * block, pixels)
    write_end = ends * output.shape[3] * output.dtype.itemsize
    return int(max(0, np.max(write_end - suffix)))


def conv_block_proof(block: int, reads_first: bool):
    """An ``overlap_proof`` for a Conv variant with ``block``-pixel units."""
    def proof(node: Node, value: Value) -> int | str:
        refusal = nhwc_check(node, value)
        if refusal:
            return refusal
        attrs = node.attrs
        return blocked_window_distance(value, node.outputs[0], attrs["strides"], attrs["pads"][:2],
                                       attrs["dilations"], tuple(node.inputs[1].shape[1:3]), block, reads_first)
    proof.__doc__ = (f"Conv variant writing {block}-pixel blocks"
                     f"{' after reading their fields' if reads_first else ''} (module docstring).")
    return proof


def conv_row_proof(reads_first: bool):
    """An ``overlap_proof`` for a Conv variant whose units are whole output rows."""
    def proof(node: Node, value: Value) -> int | str:
        refusal = nhwc_check(node, value)
        if refusal:
            return refusal
        return conv_block_proof(node.outputs[0].shape[2], reads_first)(node, value)
    return proof


def pool_block_proof(block: int, reads_first: bool):
    """An ``overlap_proof`` for a pooling variant with ``block``-pixel units."""
    def proof(node: Node, value: Value) -> int | str:
        refusal = nhwc_check(node, value)
        if refusal:
            return refusal
        attrs = node.attrs
        return blocked_window_distance(value, node.outputs[0], attrs["strides"], attrs["pads"][:2], (1, 1),
                                       tuple(attrs["kernel_shape"]), block, reads_first)
    return proof
