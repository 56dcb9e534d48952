"""Remove nodes that return their input unchanged.

Input: any graph. Output: the graph without the no-ops below; readers of a removed node's
output read its input instead. When the output is a graph output, the producer of the
input takes the output value over, so **graph output names never change**; if that is
impossible (the input is a graph input or constant) the node stays.

No-ops (each a named predicate in ``NOOP_RULES``):

* ``Identity``, ``Dropout`` (inference);
* ``Reshape`` / ``Flatten`` / ``Squeeze`` / ``Unsqueeze`` whose output shape equals the input's;
* ``Transpose`` with the identity permutation;
* ``Slice`` that keeps every element in order (output shape == input shape, steps > 0);
* ``Pad`` with all-zero pads;
* ``Split`` into a single piece, ``Concat`` of a single input;
* ``Clip`` with neither bound.
"""
from __future__ import annotations

import logging
from typing import Callable

from ..ir import Graph, Node
from .permutation import is_identity
from .rewrite import forward

log = logging.getLogger(__name__)


def _same_shape(node: Node) -> bool:
    return node.outputs[0].shape == node.inputs[0].shape


def _slice_keeps_all(node: Node) -> bool:
    return _same_shape(node) and all(step > 0 for step in node.attrs["steps"])


NOOP_RULES: dict[str, Callable[[Node], bool]] = {
    "Identity": lambda node: True,
    "Dropout": lambda node: True,
    "Reshape": _same_shape,
    "Flatten": _same_shape,
    "Squeeze": _same_shape,
    "Unsqueeze": _same_shape,
    "Transpose": lambda node: is_identity(node.attrs["perm"]),
    "Slice": _slice_keeps_all,
    "Pad": lambda node: not any(node.attrs["pads"]),
    "Split": lambda node: len(node.outputs) == 1,
    "Concat": lambda node: len(node.inputs) == 1,
    "Clip": lambda node: node.attrs["min"] is None and node.attrs["max"] is None,
}


def is_noop(node: Node) -> bool:
    rule = NOOP_RULES.get(node.op)
    return rule is not None and len(node.outputs) == 1 and rule(node)


class RemoveNoOps:
    name = "remove_noops"
    requires = "a verified graph"
    ensures = ("no Identity / Dropout / same-shape reshape / identity Transpose / full Slice / "
               "zero Pad / one-piece Split or Concat / unbounded Clip remains, except where "
               "removing it would rename a graph output")

    def run(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            if is_noop(node) and forward(graph, node, node.inputs[0]):
                log.debug("remove_noops: removed %s (%s)", node.name, node.op)
                changed = True
        return changed
