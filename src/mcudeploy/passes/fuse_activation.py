"""Fuse a clamp activation into the op that produces its input.

Input: a graph with ``Relu`` / ``Clip`` nodes after Conv, ConvTranspose, Gemm, Add, Sub,
Mul, MaxPool or AveragePool. Output: the producer carries the clamp in its
``activation_min`` / ``activation_max`` attributes and produces the activation's output
value (same name), the activation node is gone.

Float semantics: ``Relu`` is the clamp ``[0, +inf)``, ``Clip(min, max)`` is ``[min, max]``
(a missing bound is infinite; ReLU6 is ``Clip(0, 6)``). A producer that already clamps to
``[a, b]`` followed by a clamp to ``[c, d]`` computes ``clip(clip(y, a, b), c, d) =
clip(y, clamp(a, c, d), clamp(b, c, d))``: the intervals intersect (and an empty
intersection collapses onto the nearer bound of ``[c, d]``, exactly as the two clamps do).

Fused only when the producer's output is read by the activation alone and is not a graph
output, and the tensor is float: quantized graphs get their clamps from the quantizer,
which knows which clamps the integer kernels can express.
"""
from __future__ import annotations

import logging
import math

from ..ir import Graph, Node
from .rewrite import absorb_into_producer, clamp_of, sole_user

log = logging.getLogger(__name__)

PRODUCERS = frozenset({"Conv", "ConvTranspose", "Gemm", "Add", "Sub", "Mul", "MaxPool", "AveragePool"})


def activation_interval(node: Node) -> tuple[float | None, float | None] | None:
    """The clamp a ``Relu`` / ``Clip`` node applies, or ``None`` for another op."""
    if node.op == "Relu":
        return 0.0, None
    if node.op == "Clip":
        return node.attrs["min"], node.attrs["max"]
    return None


def combine_clamps(inner: tuple[float | None, float | None],
                   outer: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """The single clamp equal to clamping by ``inner`` and then by ``outer``."""
    low_c = -math.inf if outer[0] is None else outer[0]
    high_d = math.inf if outer[1] is None else outer[1]

    def into_outer(bound: float | None, infinite: float) -> float | None:
        value = infinite if bound is None else bound
        value = min(max(value, low_c), high_d)
        return None if math.isinf(value) else value

    return into_outer(inner[0], -math.inf), into_outer(inner[1], math.inf)


class FuseActivation:
    name = "fuse_activation"
    requires = "a verified graph"
    ensures = ("no Relu / Clip reads the single-use float output of a Conv, ConvTranspose, "
               "Gemm, Add, Sub, Mul, MaxPool or AveragePool")

    def run(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            interval = activation_interval(node)
            if interval is None:
                continue
            producer = node.inputs[0].producer
            if (producer is None or producer.op not in PRODUCERS
                    or sole_user(graph, node.inputs[0]) is not node
                    or not node.inputs[0].dtype.is_float):
                continue
            low, high = combine_clamps(clamp_of(producer), interval)
            producer.attrs["activation_min"] = low
            producer.attrs["activation_max"] = high
            absorb_into_producer(graph, producer, node)
            log.debug("fuse_activation: %s fused into %s as [%s, %s]", node.name, producer.name, low, high)
            changed = True
        return changed
