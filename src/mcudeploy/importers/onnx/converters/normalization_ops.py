"""Normalisations, attention and losses: LRN, LayerNormalization, RMSNormalization,
InstanceNormalization, GroupNormalization, LpNormalization, MeanVarianceNormalization,
Attention, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.

* GroupNormalization before opset 21 has one scale / bias per *group*; a constant one is
  repeated per channel (the opset-21 form the IR holds).
* SoftmaxCrossEntropyLoss = ``LogSoftmax(X, axis=1)`` (its optional ``log_prob`` output)
  followed by NegativeLogLikelihoodLoss (ONNX defines it so).
* Attention's ``softmax_precision`` is ignored: the float reference computes in float64.
"""
from __future__ import annotations

import numpy as np
import onnx

from ....ir import Value
from ..context import ConversionContext
from .math_ops import output_names
from .registry import converter
from .spatial import NCHW


def _kept(ctx: ConversionContext, node: onnx.NodeProto, names: tuple[str, ...]) -> dict:
    attrs = ctx.attributes(node)
    return {key: attrs[key] for key in names if key in attrs}


@converter("LRN")
def convert_lrn(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = {**_kept(ctx, node, ("size", "alpha", "beta", "bias")), "layout": NCHW}
    if "size" not in attrs:
        raise ctx.invalid(node, "the size attribute is missing")
    ctx.emit("LRN", [ctx.input(node, 0)], attrs, node)


@converter("LayerNormalization")
def convert_layer_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    inputs = [ctx.input(node, i) for i in range(3)]
    attrs = _kept(ctx, node, ("axis", "epsilon", "stash_type"))
    ctx.emit("LayerNormalization", inputs, attrs, node, outputs=output_names(ctx, node, 3))


@converter("RMSNormalization")
def convert_rms_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = _kept(ctx, node, ("axis", "epsilon", "stash_type"))
    ctx.emit("RMSNormalization", [ctx.input(node, 0), ctx.input(node, 1)], attrs, node)


@converter("InstanceNormalization")
def convert_instance_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = {**_kept(ctx, node, ("epsilon",)), "layout": NCHW}
    ctx.emit("InstanceNormalization", [ctx.input(node, i) for i in range(3)], attrs, node)


@converter("GroupNormalization")
def convert_group_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    attrs = _kept(ctx, node, ("num_groups", "epsilon", "stash_type"))
    groups, channels = attrs.get("num_groups", 0), x.shape[1] if x.rank > 1 else 0
    inputs: list[Value | None] = [x]
    for index, what in ((1, "scale"), (2, "bias")):
        if ctx.opset >= 21 or channels == groups:
            inputs.append(ctx.input(node, index))
            continue
        per_group = ctx.required_constant_input(node, index, what)
        if groups <= 0 or per_group.size != groups or channels % groups:
            raise ctx.invalid(node, f"{what} {list(per_group.shape)} does not match "
                              f"{groups} groups of {x.type_str()}")
        inputs.append(ctx.graph.add_constant(ctx.helper_name(node, f"{what}_per_channel"),
                                             np.repeat(per_group, channels // groups)))
    ctx.emit("GroupNormalization", inputs, attrs, node)


@converter("LpNormalization")
def convert_lp_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("LpNormalization", [ctx.input(node, 0)], _kept(ctx, node, ("axis", "p")), node)


@converter("MeanVarianceNormalization")
def convert_mean_variance_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("MeanVarianceNormalization", [ctx.input(node, 0)], _kept(ctx, node, ("axes",)), node)


ATTENTION_ATTRS = ("scale", "is_causal", "q_num_heads", "kv_num_heads", "softcap",
                   "qk_matmul_output_mode")


@converter("Attention")
def convert_attention(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    inputs = [ctx.input(node, i) for i in range(7)]
    ctx.emit("Attention", inputs, _kept(ctx, node, ATTENTION_ATTRS), node,
             outputs=output_names(ctx, node, 4))


def _loss_attrs(ctx: ConversionContext, node: onnx.NodeProto) -> dict:
    attrs = ctx.attributes(node)
    ignore = attrs.get("ignore_index")
    return {"reduction": attrs.get("reduction", "mean"),
            "ignore_index": () if ignore is None else (ignore,)}


@converter("NegativeLogLikelihoodLoss")
def convert_nll_loss(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    inputs = [ctx.input(node, i) for i in range(3)]
    ctx.emit("NegativeLogLikelihoodLoss", inputs, _loss_attrs(ctx, node), node)


@converter("SoftmaxCrossEntropyLoss")
def convert_softmax_cross_entropy_loss(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    loss, log_prob = output_names(ctx, node, 2)
    log_softmax = ctx.emit("LogSoftmax", [ctx.input(node, 0)], {"axis": 1}, node,
                           name=ctx.helper_name(node, "log_softmax"), outputs=[log_prob])
    inputs = [log_softmax.outputs[0], ctx.input(node, 1), ctx.input(node, 2)]
    ctx.emit("NegativeLogLikelihoodLoss", inputs, _loss_attrs(ctx, node), node, outputs=[loss])
