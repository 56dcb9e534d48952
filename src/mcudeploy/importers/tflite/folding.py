"""Fold the static shape computations of a TFLite model while it is imported.

Keras exports compute shapes inside the graph (``SHAPE -> STRIDED_SLICE -> PACK ->
RESHAPE``, ``TILE`` by a computed count, ``FILL``). Every IR shape is static, so:

* ``SHAPE`` of a tensor is a constant (its converter binds it, see ``ops.shape``);
* after an operator is converted, each new node whose inputs are all constants is
  evaluated with the IR's own float reference kernels (the executable op spec, so no op
  semantics are written twice) and its outputs become constants of the same name, dtype,
  shape and quantization. An operator reading them (RESHAPE's shape, TILE's multiples,
  STRIDED_SLICE's bounds) then sees a constant, and the chain disappears from the graph.

Not folded: Quantize/DequantizeLinear (a quantized weight stays quantized), arithmetic
on quantized values (the float kernels would compute on raw integers; data movement
such as a Reshape of an int8 constant is folded, since it keeps the values), and results
larger than :data:`MAX_FOLDED_ELEMENTS` (cheaper to compute than to store).
"""
from __future__ import annotations

import logging

import numpy as np

from ...errors import McuDeployError
from ...ir import Node, Value, get_op
from ...reference.float_kernels import get_kernel
from .context import ConversionContext

log = logging.getLogger(__name__)

NEVER_FOLDED = frozenset({"QuantizeLinear", "DequantizeLinear"})
MAX_FOLDED_ELEMENTS = 1 << 20


def _foldable(node: Node) -> bool:
    present = [v for v in node.inputs if v is not None]
    if node.op in NEVER_FOLDED or not present or not all(v.is_constant for v in present):
        return False
    if sum(v.size for v in node.outputs) > MAX_FOLDED_ELEMENTS:
        return False
    quantized = any(v.quant is not None for v in (*present, *node.outputs))
    return not quantized or get_op(node.op).category == "shape"


def _fold(ctx: ConversionContext, node: Node) -> bool:
    try:
        results = get_kernel(node.op)(node, [None if v is None else v.const for v in node.inputs])
    except (McuDeployError, ValueError, TypeError, IndexError) as err:
        log.debug("%s: not folding %s (%s): %s", ctx.where(), node.name, node.op, err)
        return False
    for old, result in zip(list(node.outputs), results, strict=True):
        array = np.asarray(result).astype(old.dtype.numpy, copy=False).reshape(old.shape)
        constant = Value(old.name, old.dtype, old.shape, const=array, quant=old.quant,
                         layout=old.layout)
        ctx.graph.replace_all_uses(old, constant)
        for tensor in ctx.operator.outputs:
            if ctx.values.get(tensor) is old:
                ctx.values[tensor] = constant
    ctx.graph.remove_node(node)
    return True


def fold_operator(ctx: ConversionContext, first_new_node: int) -> None:
    """Fold the nodes the current operator added (from index ``first_new_node`` on)."""
    for node in list(ctx.graph.nodes[first_new_node:]):
        if _foldable(node) and _fold(ctx, node):
            log.debug("%s: folded %s (%s) at import time", ctx.where(), node.name, node.op)
