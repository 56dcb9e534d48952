"""``MatMul(X, const W[K, N])`` (+ a following ``Add`` of a constant ``[N]``) ->
``Gemm(X, W^T, B, transB=1)``: the fully connected layer TFLite's integer kernels and the
C runtime take (FULLY_CONNECTED, weights ``[N, K]``).

    Y = X @ W + B  ==  Gemm(X, W^T, B, transB = 1)

Only 2-D ``X`` and 2-D constant ``W``; the ``Add`` is absorbed only when it alone reads the
MatMul, adds a constant of ``N`` elements and carries no clamp. Node and value names are
kept (the Gemm takes over the Add's output value), so reports and ranges keep the model's
names.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .rewrite import drop_node, replace_op


def _foldable(node: Node) -> bool:
    x, weights = node.inputs
    return weights.const is not None and x.rank == 2 and weights.rank == 2


def _bias_add(graph: Graph, node: Node, units: int) -> tuple[Node, np.ndarray] | None:
    """The ``Add`` of a constant ``[units]`` (or ``[1, units]``) that alone reads ``node``."""
    output = node.outputs[0]
    if len(output.uses) != 1 or output in graph.outputs:
        return None
    user, index = output.uses[0]
    other = user.inputs[1 - index] if user.op == "Add" else None
    if other is None or other.const is None or other.size != units or other.shape[-1] != units:
        return None
    if user.attrs.get("activation_min") is not None or user.attrs.get("activation_max") is not None:
        return None
    return user, other.const.reshape(units).astype(np.float32)


class MatMulToGemm:
    name = "matmul_to_gemm"
    requires = "any graph"
    ensures = "no MatMul of a 2-D input by a constant 2-D matrix is left (they are Gemm, transB = 1)"

    def check_ensures(self, graph: Graph) -> str | None:
        left = [n.name for n in graph.nodes if n.op == "MatMul" and _foldable(n)]
        return f"MatMul node(s) {', '.join(left)} were not rewritten" if left else None

    def run(self, graph: Graph) -> bool:
        changed = False
        for node in [n for n in graph.nodes if n.op == "MatMul" and _foldable(n)]:
            x, weights = node.inputs
            units = weights.shape[1]
            assert weights.const is not None  # _foldable checked it
            transposed = graph.add_constant(f"{weights.name}_t", np.ascontiguousarray(weights.const.T))
            found = _bias_add(graph, node, units)
            bias = None if found is None else graph.add_constant(f"{node.name}_bias", found[1])
            gemm = replace_op(node, "Gemm", [x, transposed, bias], {"transB": 1})
            if found is not None:
                add = found[0]                 # the Gemm takes over the Add's output value (and name)
                final = add.outputs[0]
                drop_node(graph, add)
                gemm.replace_output(0, final)
            changed = True
        return changed
