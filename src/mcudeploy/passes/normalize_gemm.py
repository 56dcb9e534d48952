"""``Gemm`` with a constant ``B`` -> ``transB = 1``, ``alpha = beta = 1``: the form of a fully
connected layer (weights ``[N, K]``) that the integer kernels take.

    alpha * A @ op(B) + beta * C  ==  Gemm(A, (alpha * op(B))^T, beta * C, transB = 1)

``transA = 1`` and a non-constant ``C`` scaled by ``beta != 1`` are left as they are.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .rewrite import replace_op


def _normal(node: Node) -> bool:
    attrs = node.attrs
    return bool(attrs["transB"]) and attrs["alpha"] == 1.0 and attrs["beta"] == 1.0


def _rewritable(node: Node) -> bool:
    bias = node.input(2)
    if node.inputs[1].const is None or node.attrs["transA"] or _normal(node):
        return False
    return bias is None or node.attrs["beta"] == 1.0 or bias.const is not None


class NormalizeGemm:
    name = "normalize_gemm"
    requires = "any graph"
    ensures = "every Gemm with constant weights (and transA = 0) has transB = 1, alpha = beta = 1"

    def check_ensures(self, graph: Graph) -> str | None:
        left = [n.name for n in graph.nodes if n.op == "Gemm" and _rewritable(n)]
        return f"Gemm node(s) {', '.join(left)} were not normalised" if left else None

    def run(self, graph: Graph) -> bool:
        changed = False
        for node in [n for n in graph.nodes if n.op == "Gemm" and _rewritable(n)]:
            attrs = dict(node.attrs)
            a, weights, bias = node.inputs[0], node.inputs[1], node.input(2)
            assert weights.const is not None  # _rewritable checked it
            matrix = weights.const if attrs["transB"] else weights.const.T
            matrix = (matrix * np.float32(attrs["alpha"])).astype(np.float32)
            new_weights = graph.add_constant(f"{weights.name}_t", np.ascontiguousarray(matrix))
            new_bias = bias
            if bias is not None and attrs["beta"] != 1.0:
                assert bias.const is not None  # _rewritable checked it
                new_bias = graph.add_constant(f"{bias.name}_scaled",
                                              (bias.const * np.float32(attrs["beta"])).astype(np.float32))
            attrs.update(transB=1, alpha=1.0, beta=1.0)
            replace_op(node, "Gemm", [a, new_weights, new_bias], attrs)
            changed = True
        return changed
