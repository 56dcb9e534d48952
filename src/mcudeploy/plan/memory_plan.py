"""Model-level memory plan: a graph -> execution order + byte offset of every arena tensor.

    plan_memory(graph, target=None, *, alignment=16, io_in_arena=True, scratch_bytes=None,
                reuse=True, schedule="memory-aware", time_limit=10.0) -> MemoryPlan

Pipeline: order (:mod:`.schedule`, or the file order with ``schedule="file"``) ->
liveness (:mod:`.liveness`) -> proved reuses (:mod:`.reuse`: views, concat slices, in-place
and overlap pairs) -> offsets. Two placements are computed and the smaller arena kept:
the portfolio allocator of :mod:`.portfolio` on the alias groups (no overlap), and the
pair-aware first fit of :mod:`.paired_greedy` (overlap allowed where proved).

Figures: ``arena_bytes = max(offset + packed size)``; ``lower_bound_bytes`` is the
live-set bound of the chosen order *before* reuse (so with reuse the arena may go below it);
reuse rate = 1 - arena / sum of tensor bytes. A plan is checked by :func:`plan_problems`:
offsets aligned, arena large enough, and two tensors alive at the same step share bytes
only when they are one alias group at consistent offsets, or an overlap pair with the output
at least ``distance`` bytes below the input. Weights (constants) are not in the arena;
:mod:`.placement` assigns them (and the arena) to memory regions.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Callable

from ..errors import UsageError
from ..ir import Graph, Node
from .bounds import live_set_bound
from .buffers import align_up, arena_size_of
from .liveness import KIND_SCRATCH, TensorLife, ordered_nodes, tensor_lives, to_buffers
from .paired_greedy import allocate_paired
from .placement import arena_region, weight_regions
from .portfolio import plan_buffers
from .reuse import OverlapPair, ReuseSet, find_reuse, group_buffers, groups_of
from .schedule import order_peak, schedule as memory_aware_schedule

logger = logging.getLogger(__name__)
SCHEDULES = ("memory-aware", "file")


@dataclass(frozen=True)
class TensorPlacement:
    name: str            # IR value name (or "<node>:scratch" for a scratch buffer)
    region: str          # target region name, or "arena" when no target is given
    offset: int          # byte offset inside the activation arena
    size: int            # bytes (unpadded)
    first_step: int      # index in MemoryPlan.order of the first node that touches it
    last_step: int
    alias_of: str | None = None   # shares bytes with another tensor (reshape alias / in-place)


@dataclass
class MemoryPlan:
    order: list[str]
    arena_bytes: int
    lower_bound_bytes: int
    alignment: int
    io_in_arena: bool
    tensors: dict[str, TensorPlacement]
    scratch: dict[str, TensorPlacement]
    weights: dict[str, str]
    file_order_bound_bytes: int = 0
    allocator: str = ""
    elided_nodes: list[str] = field(default_factory=list)   # no kernel call needed (concat in place)
    pairs: list[OverlapPair] = field(default_factory=list)
    reuse_refusals: list[tuple[str, str]] = field(default_factory=list)
    schedule_exact: bool = False

    @property
    def total_tensor_bytes(self) -> int:
        return sum(align_up(t.size, self.alignment) for t in [*self.tensors.values(), *self.scratch.values()])

    @property
    def reuse_rate(self) -> float:
        """1 - arena / sum of tensor bytes (0 when there are no tensors)."""
        total = self.total_tensor_bytes
        return 1.0 - self.arena_bytes / total if total else 0.0

    def peak_step(self) -> tuple[int, list[TensorPlacement]]:
        """The step where the arena's top is reached (ties: the most bytes alive), and the
        tensors alive there, largest first."""
        placements = [*self.tensors.values(), *self.scratch.values()]
        best_step, best_key = 0, (-1, -1)
        for step in range(len(self.order)):
            alive = [p for p in placements if p.first_step <= step <= p.last_step]
            key = (max((p.offset + align_up(p.size, self.alignment) for p in alive), default=0),
                   sum(p.size for p in alive))
            if key > best_key:
                best_step, best_key = step, key
        alive = [p for p in placements if p.first_step <= best_step <= p.last_step]
        return best_step, sorted(alive, key=lambda p: -p.size)

    def to_json(self) -> dict:
        return {"arena_bytes": self.arena_bytes, "lower_bound_bytes": self.lower_bound_bytes,
                "file_order_bound_bytes": self.file_order_bound_bytes, "alignment": self.alignment,
                "io_in_arena": self.io_in_arena, "reuse_rate": round(self.reuse_rate, 4),
                "allocator": self.allocator, "order": list(self.order),
                "elided_nodes": list(self.elided_nodes),
                "tensors": {name: asdict(p) for name, p in self.tensors.items()},
                "scratch": {name: asdict(p) for name, p in self.scratch.items()},
                "weights": dict(self.weights),
                "overlaps": [asdict(p) for p in self.pairs]}


def plan_memory(graph: Graph, target=None, *, alignment: int = 16, io_in_arena: bool = True,
                scratch_bytes: Callable[[Node], int] | None = None, reuse: bool = True,
                schedule: str = "memory-aware", time_limit: float = 10.0,
                concat_in_place: bool | None = None, overlap: bool = True) -> MemoryPlan:
    """Plan the activation arena of ``graph`` (module docstring). ``concat_in_place`` /
    ``overlap`` switch single reuse kinds (for measurements); ``reuse=False`` switches off
    both (views still alias)."""
    _check_options(alignment, schedule, time_limit)
    if schedule == "memory-aware":
        order = memory_aware_schedule(graph, alignment=alignment, io_in_arena=io_in_arena,
                                      scratch_bytes=scratch_bytes, time_limit=time_limit / 4)
        names, exact = order.order, order.exact
        file_bound = order.file_order_peak
    else:
        names, exact = [n.name for n in graph.nodes], False
        file_bound = order_peak(graph, names, alignment, io_in_arena, scratch_bytes)
    nodes = ordered_nodes(graph, names)
    lives = tensor_lives(graph, names, io_in_arena=io_in_arena, scratch_bytes=scratch_bytes)
    bound = live_set_bound(to_buffers(lives, alignment)).bytes
    # views (Reshape & co.) always alias: they cost nothing and their kernel is a no-op then
    found = find_reuse(graph, nodes, lives, alignment, concat_in_place=concat_in_place if reuse else False,
                       overlap=overlap and reuse)
    offsets, allocator = _place(lives, found, alignment, time_limit)
    plan = _assemble(graph, target, names, lives, found, offsets, alignment, io_in_arena, bound)
    plan.file_order_bound_bytes, plan.allocator, plan.schedule_exact = file_bound, allocator, exact
    problems = plan_problems(plan)
    if problems:   # a bug, not a user mistake
        raise AssertionError("invalid memory plan: " + "; ".join(problems[:5]))
    return plan


def _check_options(alignment: int, schedule: str, time_limit: float) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise UsageError(f"--alignment must be a power of two (1, 4, 16, 32...), got {alignment}")
    if schedule not in SCHEDULES:
        raise UsageError(f"schedule {schedule!r} is unknown; choose one of {', '.join(SCHEDULES)}")
    if time_limit <= 0:
        raise UsageError(f"time limit must be positive, got {time_limit}")


def _place(lives: list[TensorLife], found: ReuseSet, alignment: int, time_limit: float):
    """Group offsets: portfolio without overlap vs pair-aware first fit; smaller arena wins."""
    groups = groups_of(lives, found)
    buffers = group_buffers(groups, alignment)
    portfolio = plan_buffers(buffers, None, time_limit=max(0.1, time_limit / 2))
    offsets, name = portfolio.offsets, portfolio.allocator
    if found.pairs:
        paired = allocate_paired(buffers, found.pairs, alignment, time_budget=min(0.3, time_limit / 8))
        if arena_size_of(buffers, paired) < portfolio.arena_size:
            offsets, name = paired, "paired first fit (overlap reuse)"
    return offsets, name


def _assemble(graph, target, names, lives, found: ReuseSet, offsets, alignment, io_in_arena,
              bound) -> MemoryPlan:
    region = arena_region(target, max((offsets[found.root(life.name)[0]] + found.root(life.name)[1]
                                       + align_up(life.size, alignment) for life in lives), default=0))
    tensors, scratch = {}, {}
    for life in lives:
        root, inner = found.root(life.name)
        alias = found.aliases[life.name].base if life.name in found.aliases else None
        placement = TensorPlacement(life.name, region, offsets[root] + inner, life.size,
                                    life.first_step, life.last_step, alias)
        if life.kind == KIND_SCRATCH:
            scratch[life.node] = placement
        else:
            tensors[life.name] = placement
    used_pairs = []
    for pair in found.pairs:
        out, inp = tensors.get(pair.output), tensors.get(pair.input)
        if out and inp and out.offset < inp.offset + align_up(inp.size, alignment) and \
                inp.offset < out.offset + align_up(out.size, alignment):
            tensors[pair.output] = TensorPlacement(**{**asdict(out), "alias_of": pair.input})
            used_pairs.append(pair)
    arena = max((p.offset + align_up(p.size, alignment) for p in [*tensors.values(), *scratch.values()]),
                default=0)
    return MemoryPlan(list(names), arena, bound, alignment, io_in_arena, tensors, scratch,
                      weight_regions(graph, target), elided_nodes=list(found.elided),
                      pairs=used_pairs, reuse_refusals=list(found.refusals))


def plan_problems(plan: MemoryPlan) -> list[str]:
    """Every broken invariant of ``plan`` (module docstring), one sentence each."""
    placements = [*plan.tensors.values(), *plan.scratch.values()]
    problems = [f"{p.name} offset {p.offset} is not a multiple of {plan.alignment}"
                for p in placements if p.offset % plan.alignment]
    pairs = {(p.output, p.input): p.distance for p in plan.pairs}
    for index, first in enumerate(placements):
        for second in placements[index + 1:]:
            if not _conflict(plan, first, second, pairs):
                continue
            problems.append(f"{first.name} [{first.offset}, +{first.size}) and {second.name} "
                            f"[{second.offset}, +{second.size}) are alive together and share bytes")
    top = max((p.offset + p.size for p in placements), default=0)
    if plan.arena_bytes < top:
        problems.append(f"arena {plan.arena_bytes} bytes < end of the highest tensor {top}")
    return problems


def _root_of(plan: MemoryPlan, name: str) -> str:
    """The alias-group base of ``name`` (views and concat slices; overlap pairs are not groups)."""
    pairs = {(p.output, p.input) for p in plan.pairs}
    while name in plan.tensors and plan.tensors[name].alias_of and (
            (name, plan.tensors[name].alias_of) not in pairs):
        name = plan.tensors[name].alias_of
    return name


def _conflict(plan: MemoryPlan, first: TensorPlacement, second: TensorPlacement, pairs: dict) -> bool:
    if first.last_step < second.first_step or second.last_step < first.first_step:
        return False
    if first.offset + first.size <= second.offset or second.offset + second.size <= first.offset:
        return False
    if first.name in plan.tensors and second.name in plan.tensors:
        roots = _root_of(plan, first.name), _root_of(plan, second.name)
        if roots[0] == roots[1]:
            return False     # one alias group: bytes shared by construction (views, slices)
        for out, inp in (roots, roots[::-1]):
            if (out, inp) in pairs and plan.tensors[out].offset <= plan.tensors[inp].offset - pairs[out, inp]:
                return False
    return True
