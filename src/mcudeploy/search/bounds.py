"""Pruning figures: a lower bound on the bytes any packing of a plan needs, and the pool of
memory a configuration lets the arena use.

Input: a placed :class:`~mcudeploy.plan.memory_plan.MemoryPlan`, a target and options.
Output: bytes.

Lower bound, over the alias groups of the plan (:func:`mcudeploy.plan.arena_banks.plan_groups`:
views and concat slices share bytes by construction) and its proved overlap pairs::

    bound = max over steps t of ( sum of extents of the groups alive at t
                                  - sum over overlap pairs alive at t of min(extent_out, extent_in) )

A pair's output may at best lie entirely on its input, so the subtraction never claims more
than any packing can save: every valid packing of this plan - in one region or spread over
banks - needs at least ``bound`` bytes at some step. The plan depends on the schedule, the
reuse switches, the alignment, the I/O placement and the kernels only (regions are chosen
after it), so one bound holds for every configuration that differs in the region knobs
(``activation_region``, ``split_arena``, ``external_activations``, ``weights``).

Pool of a configuration: the bytes the arena may take, region by region ``min(size,
sram_limit)`` for on-chip regions (0 for reserved ones), less the fixed items (stack,
runtime state, reserve) in the home region when the ledger of that plan says so:

    pool = sum over the allowed regions          (split_arena)
         = the largest allowed region             (otherwise; the pinned one if pinned)

``bound > pool``: no allocator, no bank split can make it fit: the search skips the
configuration and says so.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..options import DeploymentOptions
from ..plan.arena_banks import plan_groups

if TYPE_CHECKING:
    from ..plan.memory_plan import MemoryPlan
    from ..targets import Target


def arena_lower_bound(plan: MemoryPlan) -> int:
    """The bound of the module docstring for ``plan``."""
    groups, roots = plan_groups(plan)
    if not groups:
        return 0
    by_root = {g.root: g for g in groups}
    steps = max(g.end for g in groups) + 1
    live = [0] * (steps + 1)
    for group in groups:
        for step in range(group.start, max(group.start + 1, group.end)):
            live[step] += group.size
    for pair in plan.pairs:
        output, source = by_root.get(roots.get(pair.output, "")), by_root.get(roots.get(pair.input, ""))
        if output is None or source is None or output is source:
            continue
        saving = min(output.size, source.size)
        for step in range(max(output.start, source.start), min(output.end, source.end)):
            live[step] -= saving
    return max(0, max(live))


def allowed_regions(target: Target, options: DeploymentOptions) -> list:
    """The regions the arena of ``options`` may go to (the placement's rule 2)."""
    if options.activation_region is not None:
        return [r for r in target.regions if r.name == options.activation_region and r.writable]
    has_npu = target.npu is not None
    return [r for r in target.regions
            if r.writable and r.holds_data and r.name not in options.reserve_regions
            and (r.on_chip or options.external_activations) and (r.npu_access or not has_npu)]


def region_room(target: Target, options: DeploymentOptions) -> dict[str, int]:
    """Capacity per region as the ledger counts it (on chip capped at ``sram_limit``)."""
    room = {}
    for region in target.regions:
        size = region.size
        if region.on_chip and options.sram_limit is not None:
            size = min(size, options.sram_limit)
        room[region.name] = 0 if region.name in options.reserve_regions else size
    return room


def arena_pool(target: Target, options: DeploymentOptions, fixed_bytes: int = 0, home: str | None = None) -> int:
    """The pool of the module docstring (``fixed_bytes`` charged to region ``home``)."""
    room = region_room(target, options)
    if home is not None:
        room[home] = max(0, room.get(home, 0) - fixed_bytes)
    sizes = [room[r.name] for r in allowed_regions(target, options)]
    if not sizes:
        return 0
    split = options.split_arena and options.activation_region is None
    return sum(sizes) if split else max(sizes)
