"""Where to tile and into how many tiles: a planning decision with a rule, returning a
:class:`TilingChoice` that the driver applies (:class:`~mcudeploy.passes.tile_spatial.TileSpatial`)
before mapping and planning. Codegen never decides it.

Given regions (``[tiling] regions``) are applied as written. With ``[tiling] auto`` the
rule is a greedy search on the memory plan itself:

1. plan the graph; take the node at the arena's peak step (:meth:`MemoryPlan.peak_step`);
2. candidate regions contain it: their ends are the first ``CANDIDATE_ENDS`` valid nodes at
   or after it whose output is smaller than every tensor between the peak and them (where a
   stage downsamples, or the network's narrow output); their starts the valid nodes up to
   ``STARTS_BACK`` before it, and the network's first layer; a candidate that meets an
   already tiled region replaces it by their union;
3. tile counts: row stripes 2, 3, 4, 5, 6, 8, 12, 16, 32 (``mode = "patches"``: 2x2, 3x2,
   2x3, 3x3, 4x2, 4x4), never more than the output has rows;
4. every candidate whose whole-graph MACC overhead (recomputed halos) stays within
   ``max_overhead`` is scored by its peak live bytes (views and in-place concats counted,
   no overlap: cheap); the ``VERIFIED`` best are planned for real and the one with the
   smallest arena wins, ties to the least MACC;
5. stop when the arena is at most ``limit``, when no candidate lowers it by
   ``MIN_GAIN``, or after ``MAX_REGIONS`` steps (a nested step is one); the smallest tile count reaching the
   limit is preferred to a larger one that goes lower (least recompute);
6. the ``BEAM`` best first steps, and the longest tilable region (the whole network) at its
   best tile count (patches: column stripes 1x2, 1x3, 1x4 too), are each continued to the
   end and the best end wins (the first of them is the plain greedy path, so the result is
   never worse than it):
   the best first region alone can block a better pair (U-Net 256: its decoder in 4x4
   patches, 4.61 MB, beats the whole network in two column stripes, 4.70 MB; but those
   stripes with their top decoder level in 4 row stripes reach 3.97 MB).

MACC of the tiled graph counts every recomputed halo row, so ``overhead = MACC(tiled) /
MACC(untiled) - 1`` is exact for the rewritten graph.

What a candidate costs (the search's own work, ``TilingChoice.built`` / ``planned`` /
``seconds``): a candidate is the regions it applies, ``(outer, nested)``, which determine the
tiled graph, so its MACC overhead, peak score and plan are computed once per key and reused
when another first step or greedy step meets it again (:class:`_Candidates`); the copies are
tiled without IR verification (the choice is applied again, verified). Tile counts of one span
are tried from the fewest: a count over the MACC budget rules out every count with at least as
many rows and columns (more cuts, at least as many halo rows), without building them.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import McuDeployError
from ..ir import Graph, Node
from ..options import TilingRegion
from ..passes.base import run_passes
from ..passes.tile_spatial import TiledRegion, TileSpatial, check_region, region_nodes, total_macc
from .bounds import live_set_bound
from .liveness import tensor_lives
from .memory_plan import MemoryPlan
from .reuse import find_reuse, group_buffers, groups_of

log = logging.getLogger(__name__)

ROW_COUNTS = (2, 3, 4, 5, 6, 8, 12, 16, 32)
PATCH_COUNTS = ((2, 2), (3, 2), (2, 3), (3, 3), (4, 2), (4, 4))
COLUMN_COUNTS = ((1, 2), (1, 3), (1, 4))   # column stripes: tried for the whole network only
BEAM = 2
CANDIDATE_ENDS = 4
STARTS_BACK = 6
VERIFIED = 4
MAX_REGIONS = 6
MIN_GAIN = 0.02

Planner = Callable[[Graph], MemoryPlan]


@dataclass
class TilingChoice:
    """The regions chosen (or given), what they became and what they cost."""
    regions: tuple[TilingRegion, ...]
    tiled: list[TiledRegion] = field(default_factory=list)
    macc_before: int = 0
    macc_after: int = 0
    arena_before: int | None = None      # auto only: the arena the search started from
    arena_after: int | None = None
    limit: int | None = None
    max_overhead: float | None = None    # auto only: the MACC budget of the search
    rule: str = "given"
    trials: int = 0           # candidates considered (cached ones included)
    built: int = 0            # tiled copies built (MACC + peak score)
    planned: int = 0          # memory plans computed
    seconds: float = 0.0
    reusable_seconds: float = 0.0   # of them, work kept for later deployments of the same key

    @property
    def overhead(self) -> float:
        return self.macc_after / self.macc_before - 1.0 if self.macc_before else 0.0

    def to_json(self) -> dict:
        return {"regions": [r.to_table() for r in self.regions], "rule": self.rule,
                "macc_before": self.macc_before, "macc_after": self.macc_after,
                "macc_overhead": round(self.overhead, 4), "arena_before": self.arena_before,
                "arena_after": self.arena_after, "limit": self.limit, "trials": self.trials,
                "built": self.built, "planned": self.planned, "seconds": round(self.seconds, 2),
                "reusable_seconds": round(self.reusable_seconds, 2),
                "tiles": [{"start": t.region.start, "end": t.region.end, "nodes": len(t.nodes),
                           "tiles": len(t.tiles), "macc_overhead": round(t.overhead, 4)} for t in self.tiled]}


def apply_tiling(graph: Graph, regions: tuple[TilingRegion, ...], verify: bool = True) -> list[TiledRegion]:
    """Tile ``graph`` in place (regions in order); what each region became. ``verify=False``
    (the search's candidate copies, only scored and planned): no IR verification after the
    pass; the chosen regions are applied again, verified, to the deployment's graph."""
    tiling = TileSpatial(regions)
    run_passes(graph, [tiling], verify_each=verify)
    return tiling.tiled


def given_tiling(graph: Graph, regions: tuple[TilingRegion, ...]) -> TilingChoice:
    """Apply the user's regions to ``graph`` (in place)."""
    before = total_macc(graph)
    tiled = apply_tiling(graph, regions)
    return TilingChoice(tuple(regions), tiled, before, total_macc(graph))


def quick_peak(graph: Graph, alignment: int, io_in_arena: bool) -> int:
    """Peak live bytes of the file order with views and in-place concats, without overlap
    reuse: the candidates' score before the few best are planned for real."""
    names = [node.name for node in graph.nodes]
    lives = tensor_lives(graph, names, io_in_arena=io_in_arena)
    found = find_reuse(graph, list(graph.nodes), lives, alignment, concat_in_place=True, overlap=False)
    return live_set_bound(group_buffers(groups_of(lives, found), alignment)).bytes


def _original(name: str) -> str:
    return name.split("@", 1)[0]


def _valid(graph: Graph, region: TilingRegion) -> list[Node] | None:
    try:
        nodes = region_nodes(graph, region)
        check_region(graph, region, nodes)
        return nodes
    except McuDeployError:
        return None


def candidate_spans(graph: Graph, hot: str) -> list[tuple[str, str]]:
    """(start, end) node names around ``hot`` (module docstring, rule 2)."""
    names = [n.name for n in graph.nodes]
    if hot not in names:
        return []
    index = names.index(hot)
    ends, smallest = [], None
    for node in graph.nodes[index:]:
        size = node.outputs[0].nbytes if node.outputs else 0
        if (smallest is None or size < smallest) and _valid(graph, TilingRegion(hot, node.name)) is not None:
            ends.append(node.name)
        smallest = size if smallest is None else min(smallest, size)
        if len(ends) == CANDIDATE_ENDS:
            break
    spans = []
    for end in ends:
        near = [n.name for n in reversed(graph.nodes[max(0, index - STARTS_BACK):index + 1])]
        valid = [start for start in near if _valid(graph, TilingRegion(start, end)) is not None]
        first = next((n.name for n in graph.nodes[:max(0, index - STARTS_BACK)]
                      if _valid(graph, TilingRegion(n.name, end)) is not None), None)   # the first layer
        spans += [(start, end) for start in valid + ([first] if first else [])]
    return spans


def _merged(original: Graph, regions: tuple[TilingRegion, ...], new: TilingRegion) -> tuple[TilingRegion, ...]:
    """``regions`` with ``new`` added; a region sharing nodes with it is replaced by the union."""
    names = [n.name for n in original.nodes]
    span = set(n.name for n in region_nodes(original, new))
    kept, start, end = [], new.start, new.end
    for region in regions:
        covered = {n.name for n in region_nodes(original, region)}
        if covered & span:
            start = min(start, region.start, key=names.index)
            end = max(end, region.end, key=names.index)
        else:
            kept.append(region)
    merged = TilingRegion(start, end, new.rows, new.columns)
    return tuple(sorted([*kept, merged], key=lambda r: names.index(r.start)))


def longest_region(graph: Graph, min_rows: int = 2, min_columns: int = 1) -> TilingRegion | None:
    """The longest valid region from the first tilable layer whose output still has
    ``min_rows`` rows and ``min_columns`` columns (None when there is none): what a test or
    a benchmark tiles when it does not care where."""
    for start in graph.nodes:
        best = None
        for end in graph.nodes[graph.nodes.index(start):]:
            output = end.outputs[0] if end.outputs else None
            if output is None or output.rank != 4 or output.shape[1] < min_rows or output.shape[2] < min_columns:
                continue
            if _valid(graph, TilingRegion(start.name, end.name)) is not None:
                best = TilingRegion(start.name, end.name)
        if best is not None:
            return best
    return None


def _counts(mode: str) -> list[tuple[int, int]]:
    return [(n, 1) for n in ROW_COUNTS] if mode == "rows" else list(PATCH_COUNTS)


def _tiled_copy(original: Graph, regions: tuple[TilingRegion, ...]) -> Graph | None:
    graph = original.copy()
    try:
        apply_tiling(graph, regions, verify=False)
    except McuDeployError:
        return None
    return graph


def _dominates(count: tuple[int, int], other: tuple[int, int]) -> bool:
    """At least as many tiles as ``other`` in both directions: at least its halos to recompute."""
    return count[0] >= other[0] and count[1] >= other[1]


def auto_tiling(graph: Graph, plan: Planner, *, limit: int | None, max_overhead: float, mode: str,
                alignment: int, io_in_arena: bool) -> TilingChoice:
    """The search of the module docstring; ``graph`` is tiled in place with the choice."""
    started = time.perf_counter()
    original, base_macc = graph.copy(), total_macc(graph)
    state = _State((), (), original, plan(original))
    choice = TilingChoice((), macc_before=base_macc, macc_after=base_macc, arena_before=state.plan.arena_bytes,
                          limit=limit, max_overhead=max_overhead,
                          rule=f"auto: limit {limit}, max overhead {max_overhead:.0%}, {mode}")
    search = _Search(original, plan, base_macc, max_overhead, mode, alignment, io_in_arena, limit, choice)
    if limit is None or state.plan.arena_bytes > limit:
        firsts = search.ranked_steps(state)[:BEAM] + search.whole_network(state)
        finals = [search.finish(first) for first in firsts]
        state = min(finals, key=search.key) if finals else state
    choice.regions, choice.arena_after = state.outer + state.nested, state.plan.arena_bytes
    choice.tiled = apply_tiling(graph, choice.regions) if choice.regions else []
    choice.macc_after, choice.seconds = total_macc(graph), time.perf_counter() - started
    log.info("auto tiling: %d region(s), arena %s -> %s, MACC +%.1f%% (%d trials, %.1f s)", len(choice.regions),
             choice.arena_before, choice.arena_after, 100 * choice.overhead, choice.trials, choice.seconds)
    return choice


@dataclass
class _State:
    outer: tuple[TilingRegion, ...]       # regions on the untiled graph's nodes
    nested: tuple[TilingRegion, ...]      # then regions inside their tiles (names "x@tile3")
    graph: Graph
    plan: MemoryPlan


def _siblings(graph: Graph, start: str, end: str, rows: int, columns: int) -> tuple[TilingRegion, ...]:
    """The same span in every tile of the region ``start`` / ``end`` belong to."""
    if "@" not in start or "@" not in end:
        return (TilingRegion(start, end, rows, columns),)
    (start_base, start_tag), (end_base, end_tag) = start.rsplit("@", 1), end.rsplit("@", 1)
    if start_tag != end_tag:
        return ()
    names = {n.name for n in graph.nodes}
    tags = sorted({n.name.rsplit("@", 1)[1] for n in graph.nodes if n.name.startswith(start_base + "@")})
    return tuple(TilingRegion(f"{start_base}@{tag}", f"{end_base}@{tag}", rows, columns) for tag in tags
                 if f"{start_base}@{tag}" in names and f"{end_base}@{tag}" in names)


@dataclass
class _Search:
    original: Graph
    plan: Planner
    base_macc: int
    max_overhead: float
    mode: str
    alignment: int
    io_in_arena: bool
    limit: int | None
    choice: TilingChoice
    scores: dict[tuple, tuple[float, int | None] | None] = field(default_factory=dict)   # key -> (overhead, peak)
    states: dict[tuple, _State] = field(default_factory=dict)                             # key -> planned state

    def moves(self, state: _State):
        """Groups of candidates, one group per span (its tile counts, fewest first): lists of
        (count, outer, nested, graph it applies to, regions to apply there)."""
        hot = state.plan.order[state.plan.peak_step()[0]] if state.plan.order else ""
        for start, end in candidate_spans(self.original, _original(hot)):
            yield [(count, outer, (), self.original, outer) for count in _counts(self.mode)
                   for outer in [_merged(self.original, state.outer, TilingRegion(start, end, *count))]]
        if state.outer:
            for start, end in candidate_spans(state.graph, hot):
                group = []
                for count in _counts(self.mode):
                    regions = _siblings(state.graph, start, end, *count)
                    if regions:
                        group.append((count, state.outer, state.nested + regions, state.graph, regions))
                yield group

    def key(self, state: _State) -> tuple:
        """What a better state is (rule 5): reaching the limit, then the least MACC; else the
        smallest arena, then the least MACC."""
        overhead = total_macc(state.graph) / self.base_macc - 1.0
        reaches = self.limit is not None and state.plan.arena_bytes <= self.limit
        return (0, overhead, state.plan.arena_bytes) if reaches else (1, state.plan.arena_bytes, overhead)

    def finish(self, state: _State) -> _State:
        """Greedy steps after the first one, ``state``, until the limit, no gain, or
        MAX_REGIONS steps in all (a nested step adds one region per tile)."""
        for _ in range(MAX_REGIONS - 1):
            if self.limit is not None and state.plan.arena_bytes <= self.limit:
                break
            found = self.best_step(state)
            if found is None:
                break
            state = found
        return state

    def best_step(self, state: _State) -> _State | None:
        """The best next state (rules 2-5); None when none lowers the arena by MIN_GAIN."""
        ranked = self.ranked_steps(state)
        return ranked[0] if ranked else None

    def score(self, key: tuple, base: Graph, regions: tuple[TilingRegion, ...],
              peak: bool = True) -> tuple[tuple[float, int | None] | None, Graph | None]:
        """(overhead, peak score or None over the budget) of candidate ``key`` (None: it does
        not tile), and its graph when it was built now; computed once per key."""
        self.choice.trials += 1
        if key in self.scores:
            return self.scores[key], None
        graph = _tiled_copy(base, regions)
        self.choice.built += 1
        if graph is None:
            self.scores[key] = None
            return None, None
        overhead = total_macc(graph) / self.base_macc - 1.0
        within = overhead <= self.max_overhead
        self.scores[key] = (overhead, quick_peak(graph, self.alignment, self.io_in_arena) if within and peak else None)
        return self.scores[key], graph

    def planned(self, key: tuple, outer, nested, base: Graph, regions, graph: Graph | None) -> _State:
        """The state of candidate ``key`` with its memory plan (planned once per key)."""
        if key not in self.states:
            graph = graph if graph is not None else _tiled_copy(base, regions)
            assert graph is not None    # it tiled when it was scored
            self.choice.planned += 1
            self.states[key] = _State(outer, nested, graph, self.plan(graph))
        return self.states[key]

    def scored_group(self, group: list, peak: bool = True) -> list[tuple]:
        """(overhead, peak, count, outer, nested, base, regions, graph) of a span's counts within
        the budget; a count over it rules out the counts that dominate it (module docstring)."""
        over: list[tuple[int, int]] = []
        found = []
        for count, outer, nested, base, regions in group:
            if any(_dominates(count, other) for other in over):
                continue
            result, graph = self.score((outer, nested), base, regions, peak)
            if result is None:
                continue
            overhead, score = result
            if overhead > self.max_overhead:
                over.append(count)
                continue
            found.append((overhead, score, count, outer, nested, base, regions, graph))
        return found

    def whole_network(self, state: _State) -> list[_State]:
        """The longest tilable region (:func:`longest_region`: the whole network when it can
        be) at its best tile count within the overhead, as one more first step (rule 6)."""
        region = longest_region(self.original)
        if region is None:
            return []
        counts = _counts(self.mode) + (list(COLUMN_COUNTS) if self.mode == "patches" else [])
        group = [(count, outer, (), self.original, outer)
                 for count in counts for outer in [(TilingRegion(region.start, region.end, *count),)]]
        best = None
        for _, _, _, outer, nested, base, regions, graph in self.scored_group(group, peak=False):
            found = self.planned((outer, nested), outer, nested, base, regions, graph)
            if found.plan.arena_bytes <= state.plan.arena_bytes * (1 - MIN_GAIN) and \
                    (best is None or self.key(found) < self.key(best)):
                best = found
        return [] if best is None else [best]

    def ranked_steps(self, state: _State) -> list[_State]:
        """The verified next states that lower the arena by MIN_GAIN, best first."""
        scored = [item for group in self.moves(state) for item in self.scored_group(group)]
        scored.sort(key=lambda item: (item[1], item[0]))
        ranked = []
        for overhead, _, _, outer, nested, base, regions, graph in scored[:VERIFIED]:
            found = self.planned((outer, nested), outer, nested, base, regions, graph)
            arena = found.plan.arena_bytes
            reaches = self.limit is not None and arena <= self.limit
            key = (0 if reaches else 1, overhead if reaches else arena, arena)
            if arena <= state.plan.arena_bytes * (1 - MIN_GAIN):
                ranked.append((key, found))
        ranked.sort(key=lambda item: item[0])
        return [found for _, found in ranked]
