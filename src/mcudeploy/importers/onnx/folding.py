"""Evaluate ONNX nodes at import time when their result does not depend on the input data.

This is what makes exported PyTorch models import: their ``Shape -> Gather -> Concat ->
Reshape`` chains compute static shapes with ops the IR does not have.

* ``Shape`` / ``Size`` of any tensor are constants, because every IR shape is static.
* A node whose inputs are all constants (and ``Constant`` itself) is run once with
  ``onnx.reference.ReferenceEvaluator`` and its outputs become constants.

Never folded: control flow (its subgraphs are refused with an explanation), nodes of other
domains, ops with random results, and Quantize/DequantizeLinear (a constant int8 weight
behind a DequantizeLinear stays quantized in the IR).
"""
from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from .context import ConversionContext

log = logging.getLogger(__name__)

NEVER_FOLDED = frozenset({
    "If", "Loop", "Scan", "QuantizeLinear", "DequantizeLinear",
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli",
})


def _shape_of(ctx: ConversionContext, node: onnx.NodeProto) -> np.ndarray | None:
    """``Shape`` / ``Size`` of a tensor whose static IR shape is known."""
    if not node.input or node.input[0] not in ctx.values:
        return None
    shape = ctx.values[node.input[0]].shape
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    attrs = ctx.attributes(node)
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return np.array(shape[slice(start, end)], dtype=np.int64)


def is_foldable(ctx: ConversionContext, node: onnx.NodeProto) -> bool:
    if node.op_type in NEVER_FOLDED or node.domain not in ("", "ai.onnx"):
        return False
    if node.op_type in ("Shape", "Size"):
        return True
    if node.op_type == "Constant":
        return True
    present = [name for name in node.input if name]
    return bool(present) and all(ctx.constant(name) is not None for name in present)


def evaluate(ctx: ConversionContext, node: onnx.NodeProto) -> list[np.ndarray]:
    """Run ``node`` on its constant inputs with the ONNX reference evaluator."""
    if node.op_type in ("Shape", "Size"):
        result = _shape_of(ctx, node)
        if result is not None:
            return [result]
    feeds = {name: ctx.constant(name) for name in node.input if name}
    evaluator = ReferenceEvaluator(node, opsets={"": ctx.opset})
    outputs = evaluator.run(None, feeds)
    return [np.asarray(array) for array in outputs]


def fold(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    """Evaluate ``node`` and record its outputs as constants (raises on evaluator errors)."""
    for name, array in zip(node.output, evaluate(ctx, node)):
        if name:
            ctx.constants[name] = array
    log.debug("folded %s %r at import time", node.op_type, node.name)
