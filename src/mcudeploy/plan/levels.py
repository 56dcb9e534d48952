"""Split at the resolution levels, then tile each level until it fits: the automatic answer
for a network whose long-lived tensors (a U-Net's skips) are larger than any on-chip bank.

Input: the deployable graph, a planner, the on-chip limit (bytes) and the planner's alignment
/ I/O rule. Output: a :class:`LevelsChoice` (tiling regions with a tile count per level, the
split points, what each level costs), which :mod:`.memory_transform` applies as given regions
and points (``[split] levels = true``); the search writes them into its ``-o`` file, so
``generate`` replays the choice without searching again.

Why: tiling alone cannot help when tensors that live from the encoder to the decoder are each
larger than a bank (U-Net 512: 8 + 4 + 2 MiB of skips against 1 MiB banks), and a graph split
alone leaves every level's own working set on chip. Spilling what crosses each level boundary
to external RAM makes the levels independent: a level's on-chip need is then its own tiles.

1. **Levels**: cut after every node whose output is a local minimum of the tensor sizes along
   the graph's order (no larger than the tensor before it, smaller than the one after it:
   where an encoder pools, where a decoder level ends before it up-samples), except the first
   and the last ``TAIL`` nodes. Every tensor produced before a cut and read after it is
   spilled (:func:`.split.given_split`).
2. **Spans**: in each part, the longest valid tiling region (:func:`.tiling.region_nodes` /
   ``check_region``): from its first node that can start one to its last that can end one.
3. **Table**: for each tile count of ``ROWS`` (row stripes) the graph is tiled at that count in
   every level at once, split, planned in file order with every concat in place where legal (the planner given: the deployment's
   reuse rules, ``schedule = "file"``: a memory-aware order only minimises the *whole* graph's
   peak and may load a level's tile slices early where that peak is elsewhere), and each
   level's on-chip need is the top of the on-chip arena over its steps
   (:meth:`.split.SplitChoice.parts`). Levels are independent once split (nothing on chip
   crosses a cut), so one tiled copy per count measures them all: the planner places each
   time-disjoint part on its own (:func:`.memory_plan._time_clusters`), so a level's top is its
   own packing, not wherever a solver left it below another level's peak. Patches (``PATCHES``: rows x columns) are measured for the
   levels that row stripes fit under the ceiling asked for only with ``PATCH_FROM`` stripes or
   more, or not at all (thin stripes recompute a halo per stripe; patches fewer); their copies
   tile only those levels. They are measured when a choice first asks for such a ceiling (the
   table is kept between trials, so a lower peak asked by a later trial adds the patches it
   needs: measured only against the room, a level that fits in 8 stripes there was left with 64
   stripes at a bank's size, where 16 x 2 patches cost a third less MACC).
4. **Choice** for a peak ``T`` (at most the limit): per level, the count with the least added
   MACC whose measured need is at most ``T`` (ties: fewer tiles; none: the count of least need).
   The whole choice is then planned for real with the deployment's planner (its memory-aware
   order often does better than the file order of the table); while its arena is above ``T``,
   the level holding the plan's peak step moves to a count of smaller need (the limit is the
   room of the tiled candidate: the runtime state per node grows with its tiles) (at most
   ``REPAIRS`` times, or until nothing changes). The result fits when its arena is at most the
   limit; a ``T`` below the limit buys a smaller arena with more tiles (the search's trade).

MACC overhead is exact (the tiled graph's MACC, halos recomputed); the external bytes are the
external arena the plan of the choice gives.
"""
from __future__ import annotations

import bisect
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import McuDeployError
from ..ir import Graph
from ..options import TilingRegion
from ..passes.tile_spatial import TiledRegion, total_macc
from .memory_plan import MemoryPlan

log = logging.getLogger(__name__)

ROWS = ((2, 1), (4, 1), (8, 1), (16, 1), (32, 1), (64, 1))
PATCHES = ((8, 2), (16, 2), (32, 2), (16, 4), (32, 4), (64, 2))
PATCH_FROM = 16
TAIL = 3
REPAIRS = 8

Planner = Callable[[Graph, frozenset], MemoryPlan]


@dataclass
class LevelCount:
    """One tile count of one level, measured."""
    count: tuple[int, int]
    need: int                 # on-chip bytes its steps keep alive (file order)
    added_macc: int           # MACC the halos add in this level


@dataclass
class Level:
    start: str
    end: str
    first: str               # the part's first and last nodes (the span may be shorter)
    last: str
    part: int = 0            # index of its part among the cuts' parts (a part with no tilable span has no level)
    counts: list[LevelCount] = field(default_factory=list)
    untiled_need: int = 0

    def smallest(self) -> list[LevelCount]:
        """The count with the smallest need (the best effort when none is under a ceiling)."""
        return [min(self.counts, key=lambda c: (c.need, c.added_macc))] if self.counts else []

    def choices(self, peak: int) -> list[LevelCount]:
        """The counts whose need is at most ``peak``, cheapest (least added MACC) first."""
        fitting = [c for c in self.counts if c.need <= peak]
        return sorted(fitting, key=lambda c: (c.added_macc, c.count[0] * c.count[1]))

    def pick(self, peak: int) -> list[LevelCount]:
        """:meth:`choices`, or the best effort (:meth:`smallest`) when none fits ``peak``."""
        return self.choices(peak) or self.smallest()


@dataclass
class LevelsChoice:
    """The levels, their chosen counts and what the choice costs."""
    points: tuple[str, ...]
    levels: list[Level]
    chosen: list[tuple[int, int] | None] = field(default_factory=list)   # None: the level is not tiled
    arena_after: int | None = None
    external_bytes: int | None = None
    macc_before: int = 0
    macc_after: int = 0
    limit: int | None = None
    peak: int | None = None
    hot_part: int | None = None   # the part of the last plan's peak step
    copies: int = 0           # tiled copies measured for the table
    plans: int = 0            # real plans of candidate choices
    seconds: float = 0.0
    rule: str = "levels"

    @property
    def regions(self) -> tuple[TilingRegion, ...]:
        return tuple(TilingRegion(level.start, level.end, *count)
                     for level, count in zip(self.levels, self.chosen) if count is not None)

    @property
    def fits(self) -> bool:
        return self.arena_after is not None and self.limit is not None and self.arena_after <= self.limit

    @property
    def overhead(self) -> float:
        return self.macc_after / self.macc_before - 1.0 if self.macc_before else 0.0

    def describe(self) -> str:
        shown = [f"{level.start}..{level.end} x{'x'.join(map(str, count)) if count[1] > 1 else count[0]}"
                 for level, count in zip(self.levels, self.chosen) if count is not None]
        return (f"{len(self.points)} cut(s) at the levels ({', '.join(self.points)}), tiles {'; '.join(shown) or 'none'}; "
                f"on-chip arena {self.arena_after} B (limit {self.limit}), external {self.external_bytes} B, "
                f"MACC +{100 * self.overhead:.1f} %")

    def to_json(self) -> dict:
        return {"rule": self.rule, "points": list(self.points), "limit": self.limit, "peak": self.peak,
                "arena_after": self.arena_after, "external_bytes": self.external_bytes,
                "macc_overhead": round(self.overhead, 4), "copies": self.copies, "plans": self.plans,
                "seconds": round(self.seconds, 2),
                "levels": [{"start": level.start, "end": level.end, "untiled_need": level.untiled_need,
                            "tiles": list(count) if count else None,
                            "measured": [{"tiles": list(c.count), "need": c.need, "added_macc": c.added_macc}
                                         for c in level.counts]}
                           for level, count in zip(self.levels, self.chosen)]}


def why_not(graph: Graph, choice: LevelsChoice) -> str:
    """One line on a choice that does not fit: where the peak is, and a float model input /
    output there (the usual cause: an int8-I/O model removes it)."""
    names = [node.name for node in graph.nodes]
    ends = [names.index(p) for p in choice.points] + [len(names) - 1]
    part = choice.hot_part if choice.hot_part is not None else 0
    first = ends[part - 1] + 1 if part > 0 else 0
    members = graph.nodes[first:ends[part] + 1]
    touched = {v.name for node in members for v in [*node.inputs, *node.outputs] if v is not None}
    edges = [v for v in [*graph.inputs, *graph.outputs] if v.name in touched and not v.dtype.is_integer]
    text = (f"[split] levels: the on-chip arena needs {choice.arena_after} B, above the {choice.limit} B the target "
            f"has on chip; its peak is in the part {members[0].name}..{members[-1].name}")
    if edges:
        shown = ", ".join(f"{v.name!r} ({v.nbytes:,} B)" for v in edges)
        return (text + f", which holds the float model input / output {shown}: make the model's inputs and outputs "
                "int8 (mcudeploy quantize FLOAT_MODEL --calib DATA --int8-io -o MODEL_int8io.onnx)")
    return text + ("; no tile count of that part goes lower: give [split] limit a larger value, or [split] points "
                   "that cut it" if any(level.part == part for level in choice.levels) else
                   "; nothing in that part can be tiled: cut it with [split] points or place it with [memory]")


def level_cuts(graph: Graph) -> list[int]:
    """Positions of the nodes after which the graph is cut (module docstring, rule 1)."""
    nodes = graph.nodes
    sizes = [sum(v.nbytes for v in node.outputs) for node in nodes]
    return [i for i in range(1, len(nodes) - TAIL) if sizes[i] <= sizes[i - 1] and sizes[i] < sizes[i + 1]]


def _span(graph: Graph, members: list) -> tuple[str, str] | None:
    from .tiling import _valid
    for first in range(len(members)):
        for last in range(len(members) - 1, first, -1):
            if _valid(graph, TilingRegion(members[first].name, members[last].name)) is not None:
                return members[first].name, members[last].name
    return None


def find_levels(graph: Graph) -> tuple[tuple[str, ...], list[Level]]:
    """The cut points and the tilable span of every part (rules 1 and 2)."""
    cuts = level_cuts(graph)
    bounds = [-1, *cuts, len(graph.nodes) - 1]
    levels = []
    for part, (before, last) in enumerate(zip(bounds, bounds[1:])):
        members = graph.nodes[before + 1:last + 1]
        span = _span(graph, members) if members else None
        if span is not None:
            levels.append(Level(span[0], span[1], members[0].name, members[-1].name, part))
    return tuple(graph.nodes[i].name for i in cuts), levels


def part_of(graph: Graph, cuts: tuple[str, ...], node_name: str) -> int:
    """Index of the part (level) that node ``node_name`` of the split graph belongs to."""
    names = [node.name for node in graph.nodes]
    ends = sorted(names.index(c) for c in cuts)
    return bisect.bisect_left(ends, names.index(node_name))


class LevelsTable:
    """Rule 3: every level's need and added MACC per tile count. Kept between trials (by
    :mod:`.memory_transform`): patches are added on demand for the ceilings a choice asks for."""

    def __init__(self, graph: Graph, plan: Planner) -> None:
        self.graph, self.plan = graph.copy(), plan      # a copy: the caller tiles its graph in place
        self.points, self.levels = find_levels(self.graph)
        self.copies = 0
        self.patched: set[int] = set()
        self.seconds = 0.0

    def measure(self, count: tuple[int, int], which: list[int],
                others: dict[int, tuple[int, int]] | None = None) -> None:
        """Tile the levels ``which`` at ``count`` (and ``others`` at their own counts, not
        measured) and record each measured level's need."""
        from .split import given_split
        from .tiling import apply_tiling
        copy = self.graph.copy()
        regions, kept = [], []
        for index in which:
            level = self.levels[index]
            rows = next(n for n in self.graph.nodes if n.name == level.end).outputs[0].shape
            if len(rows) == 4 and rows[1] >= count[0] and rows[2] >= count[1]:
                regions.append(TilingRegion(level.start, level.end, *count))
                kept.append(index)
        if not regions:
            return
        for index, other in (others or {}).items():
            if index not in which and other != (1, 1):
                regions.append(TilingRegion(self.levels[index].start, self.levels[index].end, *other))
        try:
            tiled = apply_tiling(copy, tuple(regions), verify=False)
            split = given_split(copy, self.points, tiled)
        except McuDeployError as err:
            log.info("levels: %s tiles not measured (%s)", count, err)
            return
        self.copies += 1
        needs = [part.on_chip_peak for part in split.parts(copy, self.plan(copy, split.external))]
        records = {r.region.start: r for r in tiled}
        for index in kept:
            level = self.levels[index]
            record: TiledRegion = records[level.start]
            level.counts.append(LevelCount(count, needs[level.part], record.macc_after - record.macc_before))

    def untiled(self) -> None:
        from .split import given_split
        copy = self.graph.copy()
        split = given_split(copy, self.points, [])
        needs = [part.on_chip_peak for part in split.parts(copy, self.plan(copy, split.external))]
        for level in self.levels:
            level.untiled_need = needs[level.part]
            level.counts.append(LevelCount((1, 1), level.untiled_need, 0))

    def patches_for(self, ceilings: list[int]) -> None:
        """Measure the patches of the levels whose rows fit ``ceilings`` (one per level) only
        with ``PATCH_FROM`` stripes or more, or not at all, unless measured already."""
        wide = [i for i, (level, ceiling) in enumerate(zip(self.levels, ceilings)) if i not in self.patched
                and (not level.choices(ceiling) or level.choices(ceiling)[0].count[0] >= PATCH_FROM)]
        if not wide:
            return
        started = time.perf_counter()
        # the other levels tiled at their choice for the ceiling: the need is the top of the
        # on-chip arena over a level's steps, and the untiled levels' megabytes of buffers
        # pushed a patched level's buffers up to 1 MiB (U-Net 256, 16x2; 350 KB planned alone)
        others = {i: picked[0].count for i, (level, ceiling) in enumerate(zip(self.levels, ceilings))
                  if i not in wide and (picked := level.pick(ceiling))}
        for count in PATCHES:
            self.measure(count, wide, others)
        self.patched.update(wide)
        self.seconds += time.perf_counter() - started


def measure_levels(graph: Graph, plan: Planner, *, limit: int) -> LevelsTable:
    """Rules 1-3: the cut points, the levels with their measured row counts, and the patches
    the ``limit`` needs (more are measured when a choice asks for a lower ceiling)."""
    started = time.perf_counter()
    table = LevelsTable(graph, plan)
    if table.points:
        table.untiled()
        for count in ROWS:
            table.measure(count, list(range(len(table.levels))))
        table.patches_for([limit] * len(table.levels))
    table.seconds = time.perf_counter() - started
    return table


def choose_levels(graph: Graph, plan: Planner, table: LevelsTable, *,
                  limit: int, peak: int | None = None,
                  room: Callable[[Graph], int] | None = None) -> LevelsChoice:
    """Rule 4 on ``graph`` (not modified): the counts for ``peak`` (default: the limit), planned
    and repaired until the arena fits the limit or no level can go lower. ``room``: the limit of
    a tiled candidate (the runtime state grows with its node count), default ``limit``.
    Patches the ceilings need and ``table`` lacks are measured into it."""
    from .split import given_split
    from .tiling import apply_tiling
    started = time.perf_counter()
    points, levels = table.points, table.levels
    target_peak = limit if peak is None else min(peak, limit)
    choice = LevelsChoice(points, levels, limit=limit, peak=target_peak, macc_before=total_macc(graph))
    ceilings = [target_peak] * len(levels)
    for _ in range(REPAIRS + 1):
        table.patches_for(ceilings)
        picks = [level.pick(ceiling) for level, ceiling in zip(levels, ceilings)]
        if any(not pick for pick in picks):
            break
        chosen = [pick[0].count if pick[0].count != (1, 1) else None for pick in picks]
        if chosen == choice.chosen:
            break                                   # the repair changed nothing: this is as low as it goes
        choice.chosen = chosen
        copy = graph.copy()
        tiled = apply_tiling(copy, choice.regions, verify=False) if choice.regions else []
        split = given_split(copy, points, tiled)
        result = plan(copy, split.external)
        choice.plans += 1
        choice.arena_after, choice.external_bytes = result.arena_bytes, result.external_bytes
        choice.macc_after = total_macc(copy)
        if room is not None:
            choice.limit = room(copy)
        if result.arena_bytes <= min(target_peak, choice.limit if choice.limit is not None else target_peak):
            break
        step, _ = result.peak_step()
        part = choice.hot_part = part_of(copy, split.points, result.order[step])
        hot = next((i for i, level in enumerate(levels) if level.part == part), None)
        if hot is None:
            break                                   # the peak is in a part nothing can tile
        ceilings[hot] = min(ceilings[hot], next(c.need for c in levels[hot].counts if c.count == picks[hot][0].count) - 1)
    choice.seconds = time.perf_counter() - started
    log.info("levels: %s (%d plan(s), %.1f s)", choice.describe(), choice.plans, choice.seconds)
    return choice
