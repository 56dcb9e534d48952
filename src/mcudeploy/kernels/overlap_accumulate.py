"""Overlap proofs of the input-channel split's kernels (``runtime/src/conv_accumulate.c``), in
the model of :mod:`.overlap`.

* ``mcu_conv_accumulate_s8_s32`` over its accumulator input ``acc_in`` (int32, the output's
  shape): loops n, y, x, o; element ``index`` of ``acc_in`` is read right before element
  ``index`` of ``acc_out`` is written and never again, so ``write_end(u) = 4 (u + 1) =
  read_low(> u)``: distance 0, fully in place (the accumulator of a k-group split is one
  buffer). Over X (the last group, when X dies there): the Conv's window proof, read as if
  every pixel's reads started at its channel 0 (they start at ``channel_begin``, higher: safe).
* ``mcu_requantize_accumulator_s32_s8``: elementwise, 4 bytes read then 1 written per
  element: distance 0.
"""
from __future__ import annotations

from ..ir import Node, Value
from .overlap import _elementwise_distance, conv_proof, proof


@proof("ConvAccumulate")
def conv_accumulate_proof(node: Node, value: Value) -> int | str:
    if node.input(0) is value:
        return conv_proof(node, value)
    if value.shape != node.outputs[0].shape or value.dtype != node.outputs[0].dtype:
        return "the accumulator input is a bias (broadcast), not the output's shape"
    return _elementwise_distance(value.size, value.dtype.itemsize, node.outputs[0].dtype.itemsize)


@proof("RequantizeAccumulator")
def requantize_accumulator_proof(node: Node, value: Value) -> int | str:
    return _elementwise_distance(value.size, value.dtype.itemsize, node.outputs[0].dtype.itemsize)
