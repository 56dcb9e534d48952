"""Constant folding: a node whose inputs are all constants becomes a constant.

Input: any graph. Output: the same graph where every foldable node was evaluated with the
float reference kernels (:mod:`mcudeploy.reference.float_kernels`, the executable op
spec) and each of its outputs replaced by a constant value of the *same name*, dtype,
shape and quantization parameters (so graph outputs keep their names).

What is not folded, and why:

* ``DequantizeLinear``: in QDQ / quantized graphs ``DequantizeLinear(int8 weights)`` is
  how the int8 storage of a weight is written; folding it would replace 1-byte weights by
  float32 ones and lose the quantization the later stages need. (``QuantizeLinear`` of a
  float constant *is* folded: the result is the int8 constant with its QuantParams.)
* nodes whose folded outputs would exceed ``max_elements`` (e.g. a Resize of a small
  constant to a large map): storing them would cost more flash than computing them.
* ops the float reference cannot run (``UnsupportedError``): logged and left alone.
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import UnsupportedError
from ..ir import Graph, Node, Value
from ..reference.float_kernels import get_kernel
from .rewrite import drop_node

log = logging.getLogger(__name__)

NEVER_FOLDED = frozenset({"DequantizeLinear"})


class FoldConstants:
    name = "fold_constants"
    requires = "a verified graph"
    ensures = ("no node except DequantizeLinear has only constant inputs (unless its result "
               "is larger than max_elements)")

    def __init__(self, max_elements: int = 1 << 20) -> None:
        self.max_elements = max_elements

    def run(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if self._foldable(node) and self._fold(graph, node):
                changed = True
        return changed

    def _foldable(self, node: Node) -> bool:
        present = [v for v in node.inputs if v is not None]
        return (node.op not in NEVER_FOLDED and bool(present)
                and all(v.is_constant for v in present)
                and sum(v.size for v in node.outputs) <= self.max_elements)

    def _fold(self, graph: Graph, node: Node) -> bool:
        arrays = [None if v is None else v.const for v in node.inputs]
        try:
            results = get_kernel(node.op)(node, arrays)
        except UnsupportedError as err:
            log.info("fold_constants: leaving %s (%s): %s", node.name, node.op, err)
            return False
        outputs = list(node.outputs)
        drop_node(graph, node)
        for old, result in zip(outputs, results, strict=True):
            array = np.asarray(result).astype(old.dtype.numpy, copy=False).reshape(old.shape)
            constant = Value(old.name, old.dtype, old.shape, const=array, quant=old.quant,
                             layout=old.layout)
            graph.replace_all_uses(old, constant)
        log.debug("fold_constants: folded %s (%s)", node.name, node.op)
        return True
