"""The memory transformations of a deployment, decided once: channel splits (by output channels,
:mod:`~mcudeploy.passes.split_channels`; by input channels into an int32 accumulator,
:mod:`~mcudeploy.passes.split_input_channels`), spatial tiling (:mod:`.tiling`), then graph split
(:mod:`.split`), as graph rewrites applied before the graph is mapped and planned (the
driver's step 2b).

Input: the deployable graph, the :class:`~mcudeploy.options.DeploymentOptions` (``[tiling]``
and ``[split]``) and the target; the order is channel splits (a split layer can still be
tiled), tiling, split (a cut may name a tiled region's end). Output: a :class:`MemoryTransform` record (the choices, the
external arena's tensors); the graph is rewritten in place. Nothing happens when both
sections are empty, so every other deployment is unchanged.

The automatic rules need a limit: ``limit`` of their section, else the room of the on-chip
region the arena would go to (:func:`on_chip_room`). Their trial plans use the deployment's
own planner settings (alignment, I/O in the arena, kernel variants, time limit: the memory-aware
order depends on it), so the arena a choice reports is the one the deployment gets.

An automatic tiling is kept by key (:func:`_auto_key`: the graph's structure - node names, ops,
attributes, output shapes and types, not weight values - the target, the limit and every
option its planner reads), the last ``AUTO_TILING_KEPT`` in this process: a search's trials
that change other options (regions, split arena, PSRAM, weights) re-apply the regions found
instead of searching them again (the record says ``cached``).
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ir import Graph
from ..kernels import choose_kernels
from ..options import DeploymentOptions
from ..passes.base import run_passes
from .ledger import RUNTIME_BASE, RUNTIME_PER_NODE
from .memory_plan import MemoryPlan, PlanOptions, plan_arguments, plan_memory
from .placement import _arena_candidates, _capacities, home_region

log = logging.getLogger(__name__)

if TYPE_CHECKING:   # the transformations are imported when options ask for them (plan start-up)
    from ..targets import Target
    from .levels import LevelsTable
    from .split import SplitChoice
    from .tiling import TilingChoice


@dataclass
class MemoryTransform:
    """The tiling, graph split and channel splits applied to a deployment."""
    tiling: TilingChoice | None = None
    split: SplitChoice | None = None
    channel_splits: dict[str, int] = field(default_factory=dict)   # Conv -> groups of output channels
    input_channel_splits: dict[str, int] = field(default_factory=dict)   # Conv -> groups of input channels

    @property
    def external(self) -> frozenset[str]:
        return self.split.external if self.split is not None else frozenset()

    def warnings(self) -> list[str]:
        """What the user asked for and did not get: an automatic tiling that stopped above its
        limit (no region lowers the arena more within the MACC budget), said rather than silent."""
        tiling = self.tiling
        if tiling is None or tiling.arena_after is None or tiling.limit is None or tiling.arena_after <= tiling.limit:
            return []
        found = (f"{len(tiling.regions)} region(s), arena {tiling.arena_before} -> {tiling.arena_after} bytes"
                 if tiling.regions else f"no region lowers the arena ({tiling.arena_after} bytes)")
        return [f"[tiling] auto: {found}, above the limit of {tiling.limit} bytes within "
                f"{tiling.max_overhead or 0:.0%} extra MACC; "
                "raise [tiling] max_overhead, try the other [tiling] mode (rows | patches), or split the graph "
                "([split] auto = true)"]

    def to_json(self) -> dict:
        return {"tiling": self.tiling.to_json() if self.tiling else None,
                "split": self.split.to_json() if self.split else None,
                "channel_splits": dict(self.channel_splits),
                "input_channel_splits": dict(self.input_channel_splits)}


def on_chip_room(graph: Graph, target: Target | None, options: DeploymentOptions) -> int | None:
    """Bytes the arena may take on chip: the largest allowed on-chip region's capacity, less
    the fixed items (stack, reserve, runtime state) when it is their home region."""
    if target is None:
        return options.sram_limit
    capacity = _capacities(target, options)
    regions = [r for r in _arena_candidates(target, options) if r.on_chip]
    if not regions:
        return None
    home = home_region(target, options).name
    fixed = options.stack + options.reserve + RUNTIME_BASE + RUNTIME_PER_NODE * len(graph.nodes)
    return max(capacity[r.name] - (fixed if r.name == home else 0) for r in regions)


AUTO_TILING_KEPT = 8
_AUTO_TILINGS: OrderedDict[tuple, TilingChoice] = OrderedDict()


def _auto_key(graph: Graph, target: Target | None, options: DeploymentOptions, limit: int) -> tuple:
    """What an automatic tiling depends on (module docstring)."""
    structure = tuple((node.name, node.op, tuple(sorted((k, repr(v)) for k, v in node.attrs.items())),
                       tuple(v.name if v is not None else "" for v in node.inputs),
                       tuple((v.shape, str(v.dtype)) for v in node.outputs)) for node in graph.nodes)
    return (structure, tuple(v.name for v in graph.inputs), tuple(v.name for v in graph.outputs),
            target.name if target is not None else None, limit, options.tiling_max_overhead, options.tiling_mode,
            PlanOptions.of(options), options.kernels)


def _auto_tiling(graph: Graph, plan: Callable[[Graph], MemoryPlan], target: Target | None, options: DeploymentOptions) -> TilingChoice:
    """:func:`.tiling.auto_tiling`, or the choice kept for the same key, re-applied."""
    from ..passes.tile_spatial import total_macc
    from .tiling import apply_tiling, auto_tiling
    limit = _limit(options.tiling_limit, graph, target, options, "tiling")
    key = _auto_key(graph, target, options, limit)
    kept = _AUTO_TILINGS.get(key)
    if kept is not None:
        _AUTO_TILINGS.move_to_end(key)
        tiled = apply_tiling(graph, kept.regions) if kept.regions else []
        return replace(kept, tiled=tiled, macc_after=total_macc(graph), rule=kept.rule + " (cached)", seconds=0.0)
    choice = auto_tiling(graph, plan, limit=limit, max_overhead=options.tiling_max_overhead, mode=options.tiling_mode,
                         alignment=options.alignment, io_in_arena=options.io_in_arena)
    choice.reusable_seconds = choice.seconds     # the whole choice is kept by key
    _AUTO_TILINGS[key] = choice
    while len(_AUTO_TILINGS) > AUTO_TILING_KEPT:
        _AUTO_TILINGS.popitem(last=False)
    return choice


_LEVELS: OrderedDict[tuple, LevelsTable] = OrderedDict()
TABLE_TIME_LIMIT = 1.0


def _levels(graph: Graph, target: Target | None, options: DeploymentOptions) -> tuple[TilingChoice | None, SplitChoice]:
    """``[split] levels`` (:mod:`.levels`): the levels' table is kept by key like an automatic
    tiling (the peak asked for is not in the key: trials that only change it re-use the table)."""
    from ..passes.tile_spatial import total_macc
    from .levels import choose_levels, measure_levels
    from .split import given_split
    from .tiling import given_tiling
    if not any(r.writable and r.holds_data and not r.on_chip for r in (target.regions if target else ())):
        raise UsageError(f"[split] levels: target {target.name if target else '(none)'!r} has no external RAM "
                         "for the tensors that cross the levels; use [tiling] auto, or a target with PSRAM")
    room = _limit(None, graph, target, options, "split")
    key = _auto_key(graph, target, options, room)
    is_new = key not in _LEVELS
    if is_new:
        # the table's plans rank tile counts; a second of allocator search each is enough (the
        # choice is then planned with the deployment's own settings)
        # and every concat in place where legal (the tiles' concats: the plan of the choice then
        # decides each one, planning both ways where it matters)
        quick = replace(options, schedule="file", time_limit=min(options.time_limit, TABLE_TIME_LIMIT))
        _LEVELS[key] = measure_levels(graph, _planner(target, quick, concat_in_place=True if options.concat_in_place
                                                      else False), limit=room)
        while len(_LEVELS) > AUTO_TILING_KEPT:
            _LEVELS.popitem(last=False)
    table = _LEVELS[key]
    if not table.points:
        raise UsageError("[split] levels: the graph has no level boundary (no tensor smaller than the ones "
                         "around it) to cut at; use [split] points or [split] auto")
    table_seconds = table.seconds if is_new else 0.0
    choice = choose_levels(graph, _planner(target, options), table, limit=room, peak=options.split_limit,
                           room=lambda tiled: _limit(None, tiled, target, options, "split"))
    # this choice's cost: its own plans and the patches it added, and the table when measured for it
    choice.copies, choice.seconds = table.copies, choice.seconds + table_seconds
    points = table.points
    if not choice.fits:
        from .levels import why_not
        raise UsageError(why_not(graph, choice))
    before = total_macc(graph)
    tiling = given_tiling(graph, choice.regions) if choice.regions else None
    if tiling is not None:
        tiling.rule, tiling.limit, tiling.arena_after = f"levels: {choice.describe()}", room, choice.arena_after
        tiling.built, tiling.planned, tiling.seconds = choice.copies, choice.plans, choice.seconds
        tiling.reusable_seconds = table_seconds      # the table is kept by key (_LEVELS)
    split = given_split(graph, points, tiling.tiled if tiling else [])
    split.rule, split.given = "levels", points
    log.info("[split] levels: MACC %d -> %d", before, total_macc(graph))
    return tiling, split


def _planner(target: Target | None, options: DeploymentOptions, **overrides):
    """A planner of candidate graphs with ``options``' settings (``overrides``: plan_memory
    keywords, e.g. ``concat_in_place=True`` for the levels table)."""
    arguments = {**plan_arguments(options), **overrides}

    def plan(graph: Graph, external: frozenset[str] = frozenset()) -> MemoryPlan:
        return plan_memory(graph, kernels=choose_kernels(graph, target, options.kernels), external=external,
                           **arguments)
    return plan


def _limit(given: int | None, graph: Graph, target: Target | None, options: DeploymentOptions, section: str) -> int:
    limit = given if given is not None else on_chip_room(graph, target, options)
    if limit is None:
        raise UsageError(f"[{section}] auto needs a limit: give [{section}] limit, [memory] sram_limit "
                         "or a target")
    return limit


def _check_channel_splits(options: DeploymentOptions) -> None:
    both = sorted(set(dict(options.channel_splits)) & set(dict(options.input_channel_splits)))
    if both:
        raise UsageError(f"[tiling]: {', '.join(map(repr, both))} in both channel_splits and input_channel_splits; "
                         "split a Conv by its output channels or by its input channels, not both")


def transform_for_memory(graph: Graph, options: DeploymentOptions, target: Target | None) -> MemoryTransform:
    """Tile, then split ``graph`` in place as ``options`` say (module docstring)."""
    transform = MemoryTransform()
    plan = _planner(target, options)
    _check_channel_splits(options)
    if options.channel_splits:
        from ..passes.split_channels import SplitChannels
        splits = SplitChannels(dict(options.channel_splits))
        run_passes(graph, [splits])
        transform.channel_splits = dict(options.channel_splits)
    if options.input_channel_splits:
        from ..passes.split_input_channels import SplitInputChannels  # only when asked for (plan start-up)
        run_passes(graph, [SplitInputChannels(dict(options.input_channel_splits))])
        transform.input_channel_splits = dict(options.input_channel_splits)
    if options.split_levels:
        given = [name for name, on in (("[tiling] regions", options.tiling_regions), ("[tiling] auto", options.tiling_auto),
                                       ("[split] points", options.split_points), ("[split] auto", options.split_auto)) if on]
        if given:
            raise UsageError(f"[split] levels chooses the tiling and the cuts itself; drop {' and '.join(given)}")
        transform.tiling, transform.split = _levels(graph, target, options)
        return transform
    if options.tiling_regions and options.tiling_auto:
        raise UsageError("[tiling]: give regions or auto = true, not both")
    if options.tiling_regions:
        from .tiling import given_tiling
        transform.tiling = given_tiling(graph, options.tiling_regions)
    elif options.tiling_auto:
        transform.tiling = _auto_tiling(graph, plan, target, options)
    if options.split_points and options.split_auto:
        raise UsageError("[split]: give points or auto = true, not both")
    tiled = transform.tiling.tiled if transform.tiling else []
    if options.split_points or options.split_auto:
        from .split import auto_split, given_split
    if options.split_points:
        transform.split = given_split(graph, options.split_points, tiled)
    elif options.split_auto:
        transform.split = auto_split(graph, plan, _limit(options.split_limit, graph, target, options, "split"))
    return transform
