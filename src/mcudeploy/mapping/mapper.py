"""Place every node of a graph on the NPU or the CPU, with the reasons for each CPU node.

This is what the hardware could run: on an NPU target the NPU nodes are those the vendor's NPU
compiler would take (``executor = "vendor-npu"``). Which device runs each node in the code
that is generated is :func:`.executor.executed_mapping` of it.

Input: an IR graph, a :class:`~mcudeploy.targets.Target` and optional node names to force
onto the CPU. Output: a :class:`Mapping` (one :class:`Placement` per node, in graph order)
with the offload rates:

* ``node_rate = NPU nodes / all nodes``;
* ``macc_rate = NPU MACC / all MACC``, MACC from ``ir.get_op(node.op).macc(node)``
  (0 when the graph has no MACC at all).

A node goes to the NPU when the target has one, it is not forced to the CPU, and no
predicate of :mod:`.predicates` objects. Targets without an NPU put every node on the CPU
with the single reason ``no-npu``. The mapper does not look at neighbours: whether a lone
NPU node between two CPU nodes is worth the hand-over is the estimator's question.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..errors import UsageError
from ..ir import Graph, Node, get_op
from ..targets import Target
from .predicates import Reason, reasons_against

NPU, CPU = "npu", "cpu"


@dataclass(frozen=True)
class Placement:
    """The device one node runs on, with the reasons."""
    node: str
    op: str
    device: str                   # "npu" or "cpu"
    macc: int
    reasons: tuple[Reason, ...] = ()

    @property
    def forced(self) -> bool:
        return any(r.code == "forced-cpu" for r in self.reasons)


@dataclass
class Mapping:
    """The device of every node of a graph, and who runs it (``executor``: ``mcudeploy`` for
    mcudeploy's C code, ``vendor-npu`` for the vendor's NPU compiler; :mod:`.executor`)."""
    target: str
    placements: list[Placement] = field(default_factory=list)
    executor: str = "mcudeploy"

    def placement(self, node_name: str) -> Placement:
        for placement in self.placements:
            if placement.node == node_name:
                return placement
        raise KeyError(node_name)

    def on(self, device: str) -> list[Placement]:
        return [p for p in self.placements if p.device == device]

    @property
    def total_macc(self) -> int:
        return sum(p.macc for p in self.placements)

    @property
    def npu_macc(self) -> int:
        return sum(p.macc for p in self.on(NPU))

    @property
    def node_rate(self) -> float:
        """Share of nodes placed on the NPU (0 for an empty graph)."""
        return len(self.on(NPU)) / len(self.placements) if self.placements else 0.0

    @property
    def macc_rate(self) -> float:
        """Share of MACC placed on the NPU (0 when the graph has no MACC)."""
        total = self.total_macc
        return self.npu_macc / total if total else 0.0


def node_macc(node: Node) -> int:
    return int(get_op(node.op).macc(node))


def check_force_cpu(graph: Graph, force_cpu: Iterable[str]) -> set[str]:
    """The ``--cpu`` node names, each checked to exist in ``graph``."""
    names = set(force_cpu)
    known = {node.name for node in graph.nodes}
    unknown = sorted(names - known)
    if unknown:
        sample = ", ".join(sorted(known)[:8])
        raise UsageError(f"--cpu {', '.join(unknown)}: no such node in graph {graph.name!r} "
                         f"(nodes include {sample}{', ...' if len(known) > 8 else ''}); "
                         "node names are listed by 'mcudeploy analyze'")
    return names


def map_graph(graph: Graph, target: Target, force_cpu: Iterable[str] = ()) -> Mapping:
    """Place each node of ``graph`` on ``target``'s NPU or CPU (see the module docstring)."""
    forced = check_force_cpu(graph, force_cpu)
    mapping = Mapping(target.name, executor="vendor-npu" if target.npu is not None else "mcudeploy")
    for node in graph.nodes:
        mapping.placements.append(_place(node, target, node.name in forced))
    return mapping


def _place(node: Node, target: Target, forced: bool) -> Placement:
    macc = node_macc(node)
    if target.npu is None:
        reason = Reason("no-npu", f"target {target.name} has no NPU: node {node.name!r} "
                                  f"({node.op}) runs on the {target.core.name}")
        return Placement(node.name, node.op, CPU, macc, (reason,))
    reasons = reasons_against(node, target.npu)
    if forced:
        reasons.insert(0, Reason("forced-cpu", f"node {node.name!r} ({node.op}) was forced onto "
                                               "the CPU with --cpu"))
    device = CPU if reasons else NPU
    return Placement(node.name, node.op, device, macc, tuple(reasons))
