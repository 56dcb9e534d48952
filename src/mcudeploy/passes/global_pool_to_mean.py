"""NHWC ``GlobalAveragePool`` -> ``ReduceMean(axes = (1, 2), keepdims = 1)``: the same
numbers, in the op TFLite's integer kernels have (MEAN) and the C runtime implements
(``mcu_mean_s8``). NCHW pools (before the layout pass) are left alone.
"""
from __future__ import annotations

from ..ir import Graph, Node
from .rewrite import replace_op


def _target(node: Node) -> bool:
    return node.op == "GlobalAveragePool" and node.attrs["layout"] == "NHWC"


class GlobalPoolToMean:
    name = "global_pool_to_mean"
    requires = "graph in NHWC layout (the cleanup pipeline ran)"
    ensures = "no NHWC GlobalAveragePool is left (they are ReduceMean over H, W)"

    def check_ensures(self, graph: Graph) -> str | None:
        left = [n.name for n in graph.nodes if _target(n)]
        return f"GlobalAveragePool node(s) {', '.join(left)} were not rewritten" if left else None

    def run(self, graph: Graph) -> bool:
        targets = [n for n in graph.nodes if _target(n)]
        for node in targets:
            replace_op(node, "ReduceMean", list(node.inputs), {"axes": (1, 2), "keepdims": 1})
        return bool(targets)
