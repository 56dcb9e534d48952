"""Graph split: which tensors live in external memory (PSRAM) between the parts of a model,
a planning decision returned as a :class:`SplitChoice` and applied by the driver
(:class:`~mcudeploy.passes.split_external.SpillTensors`) before mapping and planning.

Two rules:

* ``[split] points``: the model is cut after each named node (in the graph's order, after
  tiling); every tensor produced at or before a cut and read after it - a graph input read
  after it, a graph output produced before it - crosses the cut and is spilled. A tiled
  region's end names its Concat; a node inside a tiled region or a name that is not in the
  deployed graph (a fused activation) is refused with the names that can be used.
* ``[split] auto``: plan; while the on-chip arena is above ``limit``, spill the largest tensor
  alive at the peak step that the peak step neither writes nor reads (a long-lived tensor
  only passing through, e.g. a U-Net skip; ties: the longest lived), up to ``MAX_SPILLS``.

The plan of a split graph (:func:`~mcudeploy.plan.memory_plan.plan_memory` with
``external``) has an on-chip arena and an external one; :meth:`SplitChoice.parts` gives the
on-chip peak and the external bytes alive of every part.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence

from ..errors import UsageError
from ..ir import Graph
from ..passes.base import run_passes
from ..passes.split_external import SpillTensors
from ..passes.tile_spatial import TiledRegion, node_by_name
from .memory_plan import MemoryPlan

log = logging.getLogger(__name__)
MAX_SPILLS = 24

Planner = Callable[[Graph, frozenset], MemoryPlan]


@dataclass
class SplitPart:
    first: str              # first node of the part (graph order)
    last: str
    nodes: int
    on_chip_peak: int       # most on-chip arena bytes alive at one of its steps
    external_alive: int     # external arena bytes alive during it


@dataclass
class SplitChoice:
    tensors: tuple[str, ...]                    # the spilled tensors
    external: frozenset[str] = frozenset()      # every tensor of the external arena (with tile stores)
    points: tuple[str, ...] = ()
    rule: str = "points"
    given: tuple[str, ...] = ()                 # the cut points as the user writes them (levels: region ends)
    arena_before: int | None = None
    arena_after: int | None = None

    def parts(self, graph: Graph, plan: MemoryPlan) -> list[SplitPart]:
        """The parts between the cut points (one part without points), with their bytes."""
        names = [n.name for n in graph.nodes]
        cuts = sorted(names.index(p) for p in self.points if p in names)
        bounds = [-1, *cuts, len(names) - 1]
        steps = {name: step for step, name in enumerate(plan.order)}
        parts = []
        for first, last in zip(bounds, bounds[1:]):
            members = names[first + 1:last + 1]
            if not members:
                continue
            span = [steps[n] for n in members]
            parts.append(SplitPart(members[0], members[-1], len(members),
                                   _alive(plan, span, external=False), _alive(plan, span, external=True)))
        return parts

    def to_json(self) -> dict:
        return {"rule": self.rule, "points": list(self.points), "given": list(self.given), "tensors": list(self.tensors),
                "external": sorted(self.external), "arena_before": self.arena_before,
                "arena_after": self.arena_after}


def _alive(plan: MemoryPlan, steps: list[int], external: bool) -> int:
    outside = set(plan.external)
    placements = [p for p in [*plan.tensors.values(), *plan.scratch.values()] if (p.name in outside) == external]
    best = 0
    for step in set(steps):
        alive = [p for p in placements if p.first_step <= step <= p.last_step]
        best = max(best, max((p.offset + p.size for p in alive), default=0))
    return best


def _cut_index(graph: Graph, point: str, tiled: list[TiledRegion]) -> int:
    """Graph position of the node a cut point names (module docstring)."""
    names = [n.name for n in graph.nodes]
    for record in tiled:
        if point == record.region.end and all(c in names for c in record.concats):
            return max(names.index(c) for c in record.concats)
        if point in record.nodes or any(point == added for added in record.added_nodes):
            raise UsageError(f"[split] points: {point!r} is inside the tiled region "
                             f"{record.region.start}..{record.region.end}; cut after the region's end "
                             f"{record.region.end!r} or before its start")
    node = node_by_name(graph, point, "[split] points")
    if node is graph.nodes[-1]:
        raise UsageError(f"[split] points: {point!r} is the last node; nothing crosses a cut after it")
    return names.index(node.name)


def cut_nodes(graph: Graph, points: tuple[str, ...], tiled: Sequence[TiledRegion] = ()) -> tuple[str, ...]:
    """The graph node after which each cut point cuts (module docstring), in graph order."""
    return tuple(graph.nodes[index].name for index in sorted(_cut_index(graph, p, list(tiled)) for p in points))


def crossing_tensors(graph: Graph, cuts: tuple[str, ...]) -> tuple[str, ...]:
    """Every tensor that crosses a cut after one of the nodes ``cuts`` (module docstring)."""
    position = {id(node): index for index, node in enumerate(graph.nodes)}
    names = [node.name for node in graph.nodes]
    last = len(graph.nodes)
    crossing: dict[str, None] = {}
    outputs = {id(v) for v in graph.outputs}
    for cut in (names.index(name) for name in cuts):
        for value in graph.values():
            if value.is_constant:
                continue
            made = position.get(id(value.producer), -1) if value.producer is not None else -1
            read = max([position[id(node)] for node, _ in value.uses] + ([last] if id(value) in outputs else []),
                       default=-1)
            if made <= cut < read:
                crossing[value.name] = None
    return tuple(crossing)


def apply_split(graph: Graph, tensors: tuple[str, ...]) -> frozenset[str]:
    """Spill ``tensors`` (in place); the names of the external arena's tensors."""
    spill = SpillTensors(tensors)
    run_passes(graph, [spill])
    return frozenset(spill.external)


def given_split(graph: Graph, points: tuple[str, ...], tiled: list[TiledRegion]) -> SplitChoice:
    """Spill what crosses the user's cut points (in place); ``points`` become node names."""
    cuts = cut_nodes(graph, points, tiled)
    tensors = crossing_tensors(graph, cuts)
    if not tensors:
        raise UsageError(f"[split] points {list(points)}: no tensor crosses these cuts")
    return SplitChoice(tensors, apply_split(graph, tensors), cuts, "points", given=tuple(points))


def auto_split(graph: Graph, plan: Planner, limit: int) -> SplitChoice:
    """The ``auto`` rule (module docstring); ``graph`` is split in place with the choice."""
    original = graph.copy()
    current, external = original, frozenset[str]()
    current_plan = plan(current, external)
    choice = SplitChoice((), rule=f"auto: limit {limit}", arena_before=current_plan.arena_bytes)
    tensors: list[str] = []
    while current_plan.arena_bytes > limit and len(tensors) < MAX_SPILLS:
        name = _passing_through(current, current_plan, external)
        if name is None:
            break
        tensors.append(name)
        current = original.copy()
        external = apply_split(current, tuple(tensors))
        current_plan = plan(current, external)
    choice.tensors, choice.arena_after = tuple(tensors), current_plan.arena_bytes
    choice.external = apply_split(graph, choice.tensors) if tensors else frozenset()
    log.info("auto split: %d tensor(s) spilled, on-chip arena %d -> %d", len(tensors), choice.arena_before,
             choice.arena_after)
    return choice


def _passing_through(graph: Graph, plan: MemoryPlan, external: frozenset[str]) -> str | None:
    """The largest tensor alive at the peak step that the step does not touch (a root)."""
    step, alive = plan.peak_step()
    node = next(n for n in graph.nodes if n.name == plan.order[step])
    touched = {v.name for v in [*node.inputs, *node.outputs] if v is not None}
    roots = {_root(plan, name) for name in touched}
    values = {v.name: v for v in graph.values() if not v.is_constant}
    paired = {(pair.output, pair.input) for pair in plan.pairs}
    candidates = [p for p in alive if p.name in values and p.name not in external and p.name not in roots
                  and (p.alias_of is None or (p.name, p.alias_of) in paired) and not p.name.endswith("@local")]
    if not candidates:
        return None
    best = max(candidates, key=lambda p: (p.size, p.last_step - p.first_step))
    return best.name


def _root(plan: MemoryPlan, name: str) -> str:
    seen = set()
    while name in plan.tensors and (alias := plan.tensors[name].alias_of) and name not in seen:
        seen.add(name)
        name = alias
    return name
