"""Model-level memory plan: a graph -> execution order + byte offset of every arena tensor.

    plan_memory(graph, *, kernels=None, alignment=16, io_in_arena=True, reuse=True,
                schedule="memory-aware", time_limit=10.0) -> MemoryPlan

Pipeline: order (:mod:`.schedule`, or the file order with ``schedule="file"``) ->
liveness (:mod:`.liveness`) -> proved reuses (:mod:`.reuse`: views, concat slices, in-place
and overlap pairs) -> offsets. Two placements are computed and the smaller arena kept:
the portfolio allocator of :mod:`.portfolio` on the alias groups (no overlap), and the
pair-aware first fit of :mod:`.paired_greedy` (overlap allowed where proved). Groups that
are never alive together with the rest (a graph split's parts: what crosses a cut is in the
external arena) are placed part by part from offset 0, each part choosing its own placement.

Regions: the plan computes offsets in one arena - two with a graph split: ``external``
names the tensors of an external arena (PSRAM), planned apart (nothing is shared across the
two) and reached through :mod:`.transfers` (copies by the ``network_copy`` hook), while
``arena_bytes`` stays the on-chip arena; :mod:`.placement` decides the region of the
arena(s) and of every weight once per deployment, and :meth:`MemoryPlan.with_placement` writes
it into the plan (every tensor's ``region``), so the plan, the ledger and the generated code
read the same region.

Two frozen records: :class:`MemoryPlan` is the *planned* record (what :func:`plan_memory`
returns; a tensor's ``region`` names its planned arena, ``"arena"`` or ``"external"``), and
:class:`PlacedMemoryPlan` the *placed* one (the same fields with the target's regions, plus
the :class:`~.placement.RegionPlacement` they came from): what a
:class:`~mcudeploy.deployment.Deployment` holds and every consumer after the driver reads.

``kernels`` (:class:`~mcudeploy.kernels.KernelSelection`) is the chosen kernel variant of
every node: it gives each node's scratch bytes and its overlap rule (an optimised kernel's
access order differs from the reference loop's). Without it, the reference kernels'.

Figures: ``arena_bytes = max(offset + packed size)``; ``no_reuse_bound_bytes`` is the
live-set bound of the chosen order *without* reuse (so with reuse the arena may go below it);
reuse rate = 1 - arena / sum of tensor bytes. A plan is checked by :func:`plan_problems`:
offsets aligned, arena large enough, and two tensors alive at the same step share bytes
only when they are one alias group at consistent offsets, or an overlap pair with the output
at least ``distance`` bytes below the input. Weights (constants) are not in the arena;
:mod:`.placement` assigns them (and the arena) to memory regions.
"""
from __future__ import annotations

import heapq
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..ir import Graph, Node
from ..kernels import KernelSelection, choose_kernels
from .bounds import live_set_bound
from .buffers import align_up, arena_size_of
from .liveness import KIND_SCRATCH, TensorLife, ordered_nodes, tensor_lives, to_buffers

if TYPE_CHECKING:
    from ..options import DeploymentOptions
from .allocators.greedy import allocate_greedy
from .paired_greedy import allocate_paired
from .placement import NO_TARGET_ARENA, NO_TARGET_EXTERNAL, NO_TARGET_WEIGHTS, RegionPlacement
from .portfolio import plan_buffers
from .reuse import Group, OverlapPair, ReuseSet, StridedOutputRule, find_reuse, group_buffers, groups_of
from .schedule import order_peak
from .schedule import schedule as memory_aware_schedule
from .transfers import Transfer, find_transfers

logger = logging.getLogger(__name__)
SCHEDULES = ("memory-aware", "file")


@dataclass(frozen=True)
class TensorPlacement:
    """Region and offset of one buffer of the plan."""
    name: str            # IR value name (or "<node>:scratch" for a scratch buffer)
    region: str          # planned: the arena ("arena" / "external"); placed: the target region
    offset: int          # byte offset inside the activation arena
    size: int            # bytes (unpadded)
    first_step: int      # index in MemoryPlan.order of the first node that touches it
    last_step: int
    alias_of: str | None = None   # shares bytes with another tensor (reshape alias / in-place)


@dataclass(frozen=True)
class MemoryPlan:
    """Order, liveness, reuse and offsets of a graph's buffers: the planned record (module
    docstring); :meth:`with_placement` gives the placed one."""
    order: list[str]
    arena_bytes: int
    no_reuse_bound_bytes: int          # live-set bound of this order without any reuse
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
    external: list[str] = field(default_factory=list)       # tensors of the external arena (graph split)
    external_bytes: int = 0                                  # its size
    transfers: dict[str, Transfer] = field(default_factory=dict)   # node -> copy across the arenas
    # tensor -> elements between its pixels (mcu_dims.c_stride) where its producer writes a
    # channel slice of an in-place channel concat (reuse.py, channel-slice); absent = dense
    channel_strides: dict[str, int] = field(default_factory=dict)

    def with_placement(self, placement: RegionPlacement) -> PlacedMemoryPlan:
        """This plan with the regions :mod:`.placement` chose (arena and weights)."""
        external = set(self.external)
        if external and placement.external_region is None:
            raise ValueError(f"graph split: tensors {sorted(external)[:3]} belong in an external arena, "
                             "but the placement has none")
        external_region = placement.external_region or placement.arena_region   # read for external tensors only

        def moved(items: dict[str, TensorPlacement]) -> dict[str, TensorPlacement]:
            return {name: _banked(p, placement) if p.name in placement.bank_of else
                    replace(p, region=external_region if name in external
                            else placement.arena_region) for name, p in items.items()}
        planned = {name: value for name, value in vars(self).items() if name != "placement"}
        return PlacedMemoryPlan(**{**planned, "tensors": moved(self.tensors), "scratch": moved(self.scratch),
                                   "weights": dict(placement.weights)}, placement=placement)

    @property
    def total_tensor_bytes(self) -> int:
        """Packed bytes of the on-chip arena's tensors and scratch buffers."""
        return sum(align_up(t.size, self.alignment) for t in self._on_chip())

    def _on_chip(self) -> list[TensorPlacement]:
        external = set(self.external)
        return [p for p in [*self.tensors.values(), *self.scratch.values()] if p.name not in external]

    @property
    def reuse_rate(self) -> float:
        """1 - arena / sum of tensor bytes (0 when there are no tensors)."""
        total = self.total_tensor_bytes
        return 1.0 - self.arena_bytes / total if total else 0.0

    def peak_step(self) -> tuple[int, list[TensorPlacement]]:
        """The step where the arena's top is reached (ties: the most bytes alive), and the
        tensors alive there, largest first (the on-chip arena's)."""
        placements = self._on_chip()
        steps = len(self.order)
        starting: list[list[TensorPlacement]] = [[] for _ in range(steps)]
        change = [0] * (steps + 1)        # bytes alive: a sweep over the steps, not steps x tensors
        for p in placements:
            first, last = max(p.first_step, 0), min(p.last_step, steps - 1)
            if first <= last:
                starting[first].append(p)
                change[first] += p.size
                change[last + 1] -= p.size
        tops: list[tuple[int, int]] = []  # max-heap of (-top, last step), expired ones dropped lazily
        best_step, best_key, alive_bytes = 0, (-1, -1), 0
        for step in range(steps):
            alive_bytes += change[step]
            for p in starting[step]:
                heapq.heappush(tops, (-(p.offset + align_up(p.size, self.alignment)), p.last_step))
            while tops and tops[0][1] < step:
                heapq.heappop(tops)
            key = (-tops[0][0] if tops else 0, alive_bytes)
            if key > best_key:
                best_step, best_key = step, key
        alive = [p for p in placements if p.first_step <= best_step <= p.last_step]
        return best_step, sorted(alive, key=lambda p: -p.size)

    def to_json(self) -> dict:
        return {"arena_bytes": self.arena_bytes, "no_reuse_bound_bytes": self.no_reuse_bound_bytes,
                "file_order_bound_bytes": self.file_order_bound_bytes, "alignment": self.alignment,
                "io_in_arena": self.io_in_arena, "reuse_rate": round(self.reuse_rate, 4),
                "allocator": self.allocator, "order": list(self.order),
                "elided_nodes": list(self.elided_nodes), "channel_strides": dict(self.channel_strides),
                "tensors": {name: asdict(p) for name, p in self.tensors.items()},
                "scratch": {name: asdict(p) for name, p in self.scratch.items()},
                "weights": dict(self.weights),
                "overlaps": [asdict(p) for p in self.pairs],
                "external": list(self.external), "external_bytes": self.external_bytes,
                "transfers": {name: asdict(t) for name, t in self.transfers.items()},
                "placement": None}


@dataclass(frozen=True, kw_only=True)
class PlacedMemoryPlan(MemoryPlan):
    """The placed record (module docstring): every tensor's ``region`` is a target region
    (or a bank of a split arena) and ``weights`` is the placement's weight regions."""
    placement: RegionPlacement

    def to_json(self) -> dict:
        return {**super().to_json(), "placement": self.placement.to_json()}


def _banked(placement: TensorPlacement, regions: RegionPlacement) -> TensorPlacement:
    """A tensor of a split arena (:mod:`.arena_banks`): its bank and its offset there."""
    bank, offset = regions.bank_of[placement.name]
    alias = None if placement.name in regions.unshared else placement.alias_of
    return replace(placement, region=bank, offset=offset, alias_of=alias)


@dataclass(frozen=True)
class PlanOptions:
    """The :func:`plan_memory` keywords a deployment's options set (:meth:`of`: the one
    mapping from :class:`~mcudeploy.options.DeploymentOptions`); hashable, so a memory
    transformation can key its cache on it."""
    alignment: int = 16
    io_in_arena: bool = True
    reuse: bool = True
    overlap: bool = True
    concat_in_place: bool | None = None     # None: decided per concat; False: never in place
    schedule: str = "memory-aware"
    time_limit: float = 10.0

    @classmethod
    def of(cls, options: DeploymentOptions) -> PlanOptions:
        """Used by the driver's plan and by the planner the memory transformations try
        candidates with (two mappings disagreed: automatic tiling planned with concat in place
        while the final plan honoured ``concat_in_place = false``)."""
        return cls(alignment=options.alignment, io_in_arena=options.io_in_arena, reuse=options.reuse,
                   overlap=options.overlap, concat_in_place=None if options.concat_in_place else False,
                   schedule=options.schedule, time_limit=options.time_limit)


def plan_arguments(options: DeploymentOptions) -> dict[str, Any]:
    """:class:`PlanOptions` of ``options`` as :func:`plan_memory` keywords."""
    return asdict(PlanOptions.of(options))


def plan_memory(graph: Graph, *, kernels: KernelSelection | None = None, alignment: int = 16,
                io_in_arena: bool = True, reuse: bool = True, schedule: str = "memory-aware",
                time_limit: float = 10.0, concat_in_place: bool | None = None,
                overlap: bool = True, external: frozenset[str] | set[str] = frozenset()) -> MemoryPlan:
    """Plan the activation arena of ``graph`` (module docstring). ``concat_in_place`` /
    ``overlap`` switch single reuse kinds (for measurements); ``reuse=False`` switches off
    both (views still alias). ``external``: tensors planned in the external arena."""
    _check_options(alignment, schedule, time_limit)
    kernels = kernels if kernels is not None else choose_kernels(graph, None, "reference")
    scratch_bytes = kernels.scratch_bytes
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
    external = frozenset(external)

    def planned(strided_output: StridedOutputRule) -> MemoryPlan:
        found = find_reuse(graph, nodes, lives, alignment, concat_in_place=concat_in_place if reuse else False,
                           overlap=overlap and reuse, distance=kernels.overlap_distance, external=external,
                           strided_output=strided_output)
        plan = _placed(graph, names, lives, found, alignment, io_in_arena, bound, time_limit, external, nodes)
        return replace(plan, file_order_bound_bytes=file_bound, schedule_exact=exact)
    plan = planned(kernels.strided_output_refusal)
    if plan.channel_strides and concat_in_place is None:
        plan = _smaller_without_channel_slices(plan, planned)
    problems = plan_problems(plan)
    if problems:   # a bug, not a user mistake
        raise AssertionError("invalid memory plan: " + "; ".join(problems[:5]))
    return plan


def _smaller_without_channel_slices(plan: MemoryPlan, planned: Callable[[StridedOutputRule], MemoryPlan]) -> MemoryPlan:
    """A channel concat in place holds its whole output from its first producer on, which
    the live-set bound of :mod:`.reuse` allows, yet overlap reuse may pack the copying
    Concat tighter: both are placed, the smaller arena is kept (ties: in place, no copy)."""
    dense = planned(lambda node: "planned both ways, the arena is smaller with the Concat copying")
    if dense.arena_bytes >= plan.arena_bytes:
        return plan
    kept = [(name, f"concat in place (channel slices): arena {plan.arena_bytes} bytes, "
                   f"{dense.arena_bytes} with the channel concats copying; kept the copies")
            for name in sorted(set(plan.elided_nodes) - set(dense.elided_nodes))]
    return replace(dense, reuse_refusals=[*dense.reuse_refusals, *kept])


def _placed(graph: Graph, names: list[str], lives: list[TensorLife], found: ReuseSet, alignment: int,
            io_in_arena: bool, bound: int, time_limit: float, external: frozenset[str],
            nodes: list[Node]) -> MemoryPlan:
    """Offsets of the groups of ``found`` (both arenas with a split), as a :class:`MemoryPlan`."""
    offsets, allocator = _place([life for life in lives if life.name not in external], found, alignment,
                               time_limit)
    if external:
        outside = [life for life in lives if life.name in external]
        offsets.update(_place(outside, found, alignment, time_limit / 2)[0])
    plan = replace(_assemble(graph, names, lives, found, offsets, alignment, io_in_arena, bound), allocator=allocator)
    if external:
        plan = _split_arenas(plan, external, find_transfers(nodes, found, external))
    return plan


def _check_options(alignment: int, schedule: str, time_limit: float) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise UsageError(f"--alignment must be a power of two (1, 4, 16, 32...), got {alignment}")
    if schedule not in SCHEDULES:
        raise UsageError(f"schedule {schedule!r} is unknown; choose one of {', '.join(SCHEDULES)}")
    if time_limit <= 0:
        raise UsageError(f"time limit must be positive, got {time_limit}")


def _place(lives: list[TensorLife], found: ReuseSet, alignment: int, time_limit: float) -> tuple[dict[int | str, int], str]:
    """Group offsets, each time-disjoint cluster of groups placed on its own from offset 0
    (:func:`_time_clusters`). Every cluster is first placed quickly (the first-fit orders,
    with and without overlap); the clusters at the top (the arena) are then searched with the
    whole time limit: a search of a cluster below the top cannot change the arena."""
    groups = groups_of(lives, found)
    clusters = _time_clusters(groups)
    if len(clusters) < 2:
        return _place_groups(groups, found, alignment, time_limit)
    quick = [_place_groups(cluster, found, alignment, 0.0) for cluster in clusters]
    sizes = [arena_size_of(group_buffers(cluster, alignment), placed) for cluster, (placed, _) in zip(clusters, quick)]
    top = [index for index, size in enumerate(sizes) if size == max(sizes)]
    for index in top:
        searched = _place_groups(clusters[index], found, alignment, time_limit / len(top))
        if arena_size_of(group_buffers(clusters[index], alignment), searched[0]) < sizes[index]:
            quick[index] = searched
    offsets: dict[int | str, int] = {}
    allocators: list[str] = []
    for placed, allocator in quick:
        offsets.update(placed)
        allocators += [allocator] if allocator not in allocators else []
    return offsets, f"each of {len(clusters)} time-disjoint parts on its own: {', '.join(allocators)}"


def _time_clusters(groups: dict[str, Group]) -> list[dict[str, Group]]:
    """The groups cut where no group is alive across a step boundary (a graph split's parts:
    every tensor crossing a cut is in the external arena). Nothing of two clusters is ever
    alive together, so each is placed from offset 0 and the arena is the largest cluster's:
    placed together, one allocator choice (overlap pairs or the portfolio) served every part,
    decided by the part of the peak, and an optimal solver may leave the other parts anywhere
    under it (the levels table of :mod:`.levels` read those parts' needs)."""
    ordered = sorted(groups.values(), key=lambda g: (g.first_step, g.last_step))
    clusters: list[dict[str, Group]] = []
    reach = -1
    for group in ordered:
        if group.first_step > reach:
            clusters.append({})
        clusters[-1][group.root] = group
        reach = max(reach, group.last_step)
    return clusters


def _place_groups(groups: dict[str, Group], found: ReuseSet, alignment: int,
                  time_limit: float) -> tuple[dict[int | str, int], str]:
    """Group offsets: portfolio without overlap vs pair-aware first fit; smaller arena wins.
    When the overlap plan is already at or below the live-set bound of the groups, no
    packing without overlap can beat it, so the portfolio's search is not run. A time limit
    of 0: the first-fit orders only (no perturbation rounds) against the greedy allocator."""
    buffers = group_buffers(groups, alignment)
    paired_name = "paired first fit (overlap reuse)"
    pairs = [p for p in found.pairs if p.output in groups and p.input in groups]
    paired = allocate_paired(buffers, pairs, alignment, time_budget=time_limit) if pairs else None
    if paired is not None and arena_size_of(buffers, paired) <= live_set_bound(buffers).bytes:
        return paired, paired_name
    if time_limit <= 0:
        greedy = allocate_greedy(buffers, None)
        if paired is not None and arena_size_of(buffers, paired) < greedy.arena_size:
            return paired, paired_name
        return dict(greedy.offsets), "greedy"
    portfolio = plan_buffers(buffers, None, time_limit=max(0.1, time_limit / 2))
    if paired is not None and arena_size_of(buffers, paired) < portfolio.arena_size:
        return paired, paired_name
    return dict(portfolio.offsets), portfolio.allocator


def _split_arenas(plan: MemoryPlan, external: frozenset[str], transfers: dict[str, Transfer]) -> MemoryPlan:
    """``plan`` with the external arena's tensors labelled and both arenas sized (graph split)."""
    tensors = {name: replace(p, region=NO_TARGET_EXTERNAL) if name in external else p
               for name, p in plan.tensors.items()}
    outside = [p for p in tensors.values() if p.name in external]
    labelled = replace(plan, tensors=tensors, external=sorted(p.name for p in outside), transfers=transfers)
    top = lambda items: max((p.offset + align_up(p.size, plan.alignment) for p in items), default=0)  # noqa: E731
    return replace(labelled, arena_bytes=top(labelled._on_chip()), external_bytes=top(outside))


def _assemble(graph: Graph, names: list[str], lives: list[TensorLife], found: ReuseSet,
              offsets: dict[int | str, int], alignment: int, io_in_arena: bool, bound: int) -> MemoryPlan:
    region = NO_TARGET_ARENA
    tensors: dict[str, TensorPlacement] = {}
    scratch: dict[str, TensorPlacement] = {}
    for life in lives:
        root, inner = found.root(life.name)
        alias = found.aliases[life.name].base if life.name in found.aliases else None
        placement = TensorPlacement(life.name, region, offsets[root] + inner, life.size,
                                    life.first_step, life.last_step, alias)
        if life.kind == KIND_SCRATCH:
            assert life.node is not None   # a scratch buffer is its node's
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
                      {v.name: NO_TARGET_WEIGHTS for v in graph.constants()}, elided_nodes=list(found.elided),
                      pairs=used_pairs, reuse_refusals=list(found.refusals),
                      channel_strides={a.name: a.channel_stride for a in found.aliases.values() if a.channel_stride})


def plan_problems(plan: MemoryPlan) -> list[str]:
    """Every broken invariant of ``plan`` (module docstring), one sentence each."""
    placements = [*plan.tensors.values(), *plan.scratch.values()]
    problems = [f"{p.name} offset {p.offset} is not a multiple of {plan.alignment}"
                for p in placements if p.offset % plan.alignment]
    pairs = {(p.output, p.input): p.distance for p in plan.pairs}
    for index, other in _alive_together(placements):
        first, second = placements[index], placements[other]
        if not _conflict(plan, first, second, pairs):
            continue
        problems.append(f"{first.name} [{first.offset}, +{first.size}) and {second.name} "
                        f"[{second.offset}, +{second.size}) are alive together and share bytes")
    external = set(plan.external)
    banks = plan.placement.arena_banks if isinstance(plan, PlacedMemoryPlan) else {}
    for bank, size in banks.items():      # a split arena (.arena_banks): each bank on its own
        top = max((p.offset + p.size for p in placements if p.region == bank and p.name not in external), default=0)
        if size < top:
            problems.append(f"arena bank {bank} {size} bytes < end of its highest tensor {top}")
    top = max((p.offset + p.size for p in placements if p.name not in external), default=0)
    if plan.arena_bytes < top and not banks:
        problems.append(f"arena {plan.arena_bytes} bytes < end of the highest tensor {top}")
    top = max((p.offset + p.size for p in placements if p.name in external), default=0)
    if plan.external_bytes < top:
        problems.append(f"external arena {plan.external_bytes} bytes < end of its highest tensor {top}")
    return problems


def _alive_together(placements: list[TensorPlacement]) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)``, ``i < j``, of placements whose step ranges intersect, in the
    order a double loop would give them; a sweep by first step, so a chain costs linear time."""
    by_start = sorted(range(len(placements)), key=lambda i: placements[i].first_step)
    found: list[tuple[int, int]] = []
    active: list[int] = []
    for index in by_start:
        start = placements[index].first_step
        active = [i for i in active if placements[i].last_step >= start]
        found.extend((min(i, index), max(i, index)) for i in active)
        active.append(index)
    return sorted(found)


def _root_of(plan: MemoryPlan, name: str, pairs: dict) -> str:
    """The alias-group base of ``name`` (views and concat slices; overlap pairs are not groups)."""
    while name in plan.tensors and (alias := plan.tensors[name].alias_of) and (
            (name, alias) not in pairs):
        name = alias
    return name


def _conflict(plan: MemoryPlan, first: TensorPlacement, second: TensorPlacement, pairs: dict) -> bool:
    if first.last_step < second.first_step or second.last_step < first.first_step:
        return False
    if first.region != second.region:     # the on-chip and the external arena (graph split)
        return False
    if first.offset + first.size <= second.offset or second.offset + second.size <= first.offset:
        return False
    if first.name in plan.tensors and second.name in plan.tensors:
        roots = _root_of(plan, first.name, pairs), _root_of(plan, second.name, pairs)
        if roots[0] == roots[1]:
            return False     # one alias group: bytes shared by construction (views, slices)
        for out, inp in (roots, roots[::-1]):
            if (out, inp) in pairs and plan.tensors[out].offset <= plan.tensors[inp].offset - pairs[out, inp]:
                return False
    return True
