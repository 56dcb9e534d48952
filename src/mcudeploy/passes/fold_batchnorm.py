"""Fold inference BatchNormalization into the Conv / ConvTranspose / Gemm before it.

With ``s = gamma / sqrt(var + eps)`` per output channel::

    W' = W * s            (scaling the weights of each output channel)
    B' = (B - mean) * s + beta      (B = 0 when the producer has no bias)

Output channel of each weight layout (:mod:`mcudeploy.ir.opdefs.conv`):

* Conv NCHW ``[O, C/g, kH, kW]``, Conv NHWC ``[O, kH, kW, C/g]``, ConvTranspose NHWC
  ``[O, kH, kW, C/g]``: axis 0.
* ConvTranspose NCHW ``[C, O/g, kH, kW]``: input channel ``c`` of group ``c // (C/g)``
  and column ``j`` feed output channel ``(c // (C/g)) * (O/g) + j``.
* Gemm: column ``n`` of ``op(B)`` (``B[:, n]`` when ``transB = 0``, ``B[n, :]`` when 1);
  the bias ``beta * C`` becomes ``C' = (beta * C - mean) * s + bn_beta`` with ``beta = 1``.

Folded only when the producer's output is read by the BN alone (and is not a graph
output), the producer has no fused activation (a clamp does not commute with a scale),
and weights, bias and BN parameters are float32 constants. New constant arrays are made,
never mutated. A BN with nothing to fold into becomes ``Mul(x, s) -> Add(., beta - mean * s)``
with per-channel constants shaped to broadcast along its channel axis.
"""
from __future__ import annotations

import logging

import numpy as np

from ..ir import DType, Graph, Node, Value
from ..ir.opdefs._common import channel_axis
from .rewrite import absorb_into_producer, drop_node, has_fused_activation, replace_constant, sole_user

log = logging.getLogger(__name__)

FOLDABLE_PRODUCERS = ("Conv", "ConvTranspose", "Gemm")


def bn_scale_shift(bn: Node) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(s, mean, beta)`` in float64 if all BN parameters are float constants."""
    params = bn.inputs[1:5]
    arrays = [v.const for v in params if v is not None and v.const is not None and v.dtype.is_float]
    if len(arrays) != len(params):
        return None
    gamma, beta, mean, var = (array.astype(np.float64) for array in arrays)
    return gamma / np.sqrt(var + bn.attrs["epsilon"]), mean, beta


def bn_channel_axis(bn: Node) -> int:
    x = bn.inputs[0]
    return channel_axis(bn.attrs["layout"]) if x.rank == 4 else min(1, x.rank - 1)


def _float_constant(value: Value | None) -> bool:
    return value is not None and value.is_constant and value.dtype == DType.FLOAT32


def _weight_scale(producer: Node, scale: np.ndarray) -> np.ndarray:
    """``scale`` broadcast onto the weight tensor's shape (see the module docstring)."""
    weights = producer.inputs[1].const
    assert weights is not None  # _can_fold checked it
    if producer.op == "Gemm":
        return scale[None, :] if producer.attrs["transB"] == 0 else scale[:, None]
    if producer.op == "ConvTranspose" and producer.attrs["layout"] == "NCHW":
        group = producer.attrs["group"]
        in_channels, out_per_group = weights.shape[0], weights.shape[1]
        output_channel = ((np.arange(in_channels)[:, None] // (in_channels // group)) * out_per_group
                          + np.arange(out_per_group)[None, :])
        return scale[output_channel][:, :, None, None]
    return scale.reshape((-1,) + (1,) * (weights.ndim - 1))


def _can_fold(graph: Graph, producer: Node | None, bn: Node) -> bool:
    if producer is None or producer.op not in FOLDABLE_PRODUCERS:
        return False
    if sole_user(graph, bn.inputs[0]) is not bn or has_fused_activation(producer):
        return False
    if not _float_constant(producer.inputs[1]):
        return False
    bias = producer.input(2)
    if bias is not None and not _float_constant(bias):
        return False
    if producer.op == "Gemm":
        return bn.inputs[0].rank == 2
    return bn.inputs[0].rank == 4 and bn.attrs["layout"] == producer.attrs["layout"]


def _fold(graph: Graph, producer: Node, bn: Node, params) -> None:
    scale, mean, beta = params
    weights = producer.inputs[1].const
    assert weights is not None  # _can_fold checked it
    new_weights = (weights.astype(np.float64) * _weight_scale(producer, scale)).astype(np.float32)
    replace_constant(graph, producer, 1, new_weights, suffix="bnfold")
    bias = producer.input(2)
    bias_array = None if bias is None else bias.const  # a float constant (checked by _can_fold)
    if producer.op == "Gemm":
        old_bias = 0.0 if bias_array is None else producer.attrs["beta"] * bias_array.astype(np.float64)
        producer.attrs["beta"] = 1.0
    else:
        old_bias = 0.0 if bias_array is None else bias_array.astype(np.float64)
    new_bias = ((old_bias - mean) * scale + beta).astype(np.float32)
    replace_constant(graph, producer, 2, new_bias, suffix="bnfold")
    absorb_into_producer(graph, producer, bn)


def _scale_shift(graph: Graph, bn: Node, params) -> None:
    """Replace ``bn`` by ``Mul`` and ``Add`` with per-channel constants."""
    scale, mean, beta = params
    x, out = bn.inputs[0], bn.outputs[0]
    shape = [1] * x.rank
    shape[bn_channel_axis(bn)] = scale.size
    dtype = x.dtype.numpy
    multiplier = graph.add_constant(f"{bn.name}_scale", scale.astype(dtype).reshape(shape))
    shift = graph.add_constant(f"{bn.name}_shift", (beta - mean * scale).astype(dtype).reshape(shape))
    mul = graph.add_node("Mul", [x, multiplier], name=f"{bn.name}_mul", before=bn)
    mul.outputs[0].layout = x.layout
    drop_node(graph, bn)
    graph.add_node("Add", [mul.outputs[0], shift], name=f"{bn.name}_add", outputs=[out], after=mul)


class FoldBatchNorm:
    name = "fold_batchnorm"
    requires = "a verified graph"
    ensures = ("no BatchNormalization with float constant parameters remains: each is folded "
               "into its producer's weights or becomes a per-channel Mul + Add")

    def run(self, graph: Graph) -> bool:
        changed = False
        for bn in list(graph.nodes):
            if bn.op != "BatchNormalization" or not bn.inputs[0].dtype.is_float:
                continue
            params = bn_scale_shift(bn)
            if params is None:
                continue
            producer = bn.inputs[0].producer
            if producer is not None and _can_fold(graph, producer, bn):
                _fold(graph, producer, bn, params)
                log.debug("fold_batchnorm: folded %s into %s", bn.name, producer.name)
            else:
                _scale_shift(graph, bn, params)
                log.debug("fold_batchnorm: %s became a scale and shift", bn.name)
            changed = True
        return changed
