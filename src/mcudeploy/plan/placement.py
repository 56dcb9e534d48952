"""Placement across memory regions: the activation arena, the application's fixed items and
each weight tensor -> a region, decided once per deployment.

Input: a graph, the arena size of its :class:`~.memory_plan.MemoryPlan`, a
:class:`~mcudeploy.targets.Target` and the :class:`~mcudeploy.options.DeploymentOptions`.
Output: :class:`RegionPlacement` (region of the arena, of the fixed items and of every
constant, bytes used per region, the reason of each choice). The memory plan takes its
regions from it (:meth:`~.memory_plan.MemoryPlan.with_placement`), the ledger its lines,
and the code generator its sections: nobody decides a region twice.

Rules:

1. Fixed items (runtime state, stack, application reserve, and the input / output buffers
   when they are the application's) go to the *home* region: the largest on-chip RAM that
   may hold data, is not reserved and that the DMA reaches (inputs arrive by DMA).
2. The arena goes to the **fastest** region that holds it (``bandwidth``, then lower
   latency): DTCM before AXI SRAM on an STM32H7 when it fits. On an NPU target the NPU must
   reach it (it streams every activation through it). Regions that are read-only, kept for
   code (``holds_data = false``, an ITCM), reserved by the user (``reserve_regions``) or
   external (PSRAM) when ``external_activations`` is off are never used. On-chip before
   external: an arena lands in PSRAM only when no on-chip region holds it, and the plan says
   so. ``activation_region`` pins it. When nothing holds it, the largest allowed region (the
   one considered last: PSRAM when allowed) carries the overflow, and the reason names the
   largest on-chip region too.
3. Weights stay where they are stored (flash). They are copied to on-chip RAM only when that
   flash is slow — at least ``SLOW_FLASH_RATIO`` times below the fastest on-chip RAM, as
   external octo/quad-SPI flash is — or when ``weights = "ram"``, and only into the room left
   after the arena; the *hot* ones move first, by saved time per byte. ``weights = "flash"``
   never copies. When the vendor's NPU compiler runs the nodes (``executor = "vendor-npu"``,
   the STM32N6) ``auto`` copies nothing either, slow flash or not: that is the vendor's
   placement (ST Edge AI keeps the weights in octoFlash and streams them to the NPU), so
   mcudeploy's plan and the vendor's agree unless the user or the search asks for ``ram``;
   the reason then says how much on-chip RAM the copy takes, and when nothing is copied, how
   much copying the hot ones would take. mcudeploy's own CPU code (``executor = "mcudeploy"``)
   keeps the rule above: its kernels re-read a filter for every output pixel.
   ``[weights] ram_limit`` caps the on-chip bytes the copies take (the most-read first, a
   greedy knapsack by saving per byte; :func:`hot_weight_budgets` gives the search its values).
   A weight tensor is read once per output pixel of its node (the reference
   kernels re-read the filter for every pixel), so

       traffic(weight) = nbytes x reads,   time(region) = traffic / bandwidth(region)
       saving per byte = reads x (1 / bandwidth(flash) - 1 / bandwidth(sram))

4. A graph split's external arena (the tensors that cross a cut, :mod:`.transfers`) goes to
   ``[split] region``, else to the largest writable external RAM of the target.
5. ``split_arena``: when no single on-chip region holds the arena (none at all, or only
   external RAM), it is spread over the allowed regions (fastest on-chip bank first, external
   RAM last when allowed), alias group by alias group (:mod:`.arena_banks`): on chip before
   external, tensor by tensor; each bank then holds its own arena array.

A region with unknown bandwidth (0) is treated as 100 MB/s (``MemoryRegion.speed``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ir import Graph, Node, Value
from ..options import DeploymentOptions
from .arena_banks import Bank, split_over_banks

if TYPE_CHECKING:
    from ..targets import Target
    from ..targets.model import MemoryRegion
    from .memory_plan import MemoryPlan

SLOW_FLASH_RATIO = 4.0   # flash this much slower than on-chip RAM: weights worth copying
NO_TARGET_ARENA, NO_TARGET_WEIGHTS, NO_TARGET_HOME = "arena", "flash", "sram"
NO_TARGET_EXTERNAL = "external"   # the external arena of a graph split, before placement


@dataclass
class RegionPlacement:
    """The regions of the arena, the fixed items and the weights."""
    arena_region: str                     # the region the arena is in (or carries its overflow)
    arena_fits: bool
    home_region: str                      # fixed items (stack, runtime state, reserve, I/O)
    weights: dict[str, str]
    used: dict[str, int]
    capacity: dict[str, int | None]
    reasons: dict[str, str] = field(default_factory=dict)    # item -> why this region
    seconds: dict[str, float] = field(default_factory=dict)  # item -> estimated access time
    notes: list[str] = field(default_factory=list)
    off_chip: list[str] = field(default_factory=list)        # items placed in external memory
    external_region: str | None = None    # the external arena of a graph split (plan.external)
    external_bytes: int = 0
    arena_banks: dict[str, int] = field(default_factory=dict)   # split arena: bank -> bytes
    bank_of: dict[str, tuple[str, int]] = field(default_factory=dict)   # split arena: tensor -> (bank, offset)
    unshared: set[str] = field(default_factory=set)   # split arena: overlap outputs no longer sharing bytes

    def to_json(self) -> dict:
        return {"arena_region": self.arena_region, "arena_fits": self.arena_fits,
                "home_region": self.home_region, "used": dict(self.used),
                "capacity": dict(self.capacity), "reasons": dict(self.reasons),
                "off_chip": list(self.off_chip), "notes": list(self.notes),
                "external_region": self.external_region, "external_bytes": self.external_bytes,
                "arena_banks": dict(self.arena_banks)}


def weight_reads(node: Node) -> int:
    """Times the C kernel reads a weight tensor of ``node``: once per output pixel for
    windowed ops (conv / pool), once per output row for a fully connected layer, else once."""
    output = node.outputs[0]
    if node.op in ("Conv", "ConvTranspose") and output.rank == 4:
        layout = node.attrs.get("layout", "NHWC")
        height, width = (output.shape[1:3] if layout == "NHWC" else output.shape[2:4])
        return output.shape[0] * height * width
    if node.op in ("Gemm", "MatMul"):
        return max(1, math.prod(output.shape[:-1]))
    return 1


def _capacities(target: Target, options: DeploymentOptions) -> dict[str, int]:
    """Usable bytes per region: on-chip regions capped at ``sram_limit``, reserved ones 0."""
    reserved = set(options.reserve_regions)
    unknown = reserved - {r.name for r in target.regions}
    if unknown:
        raise UsageError(f"reserve_regions: {', '.join(sorted(unknown))} not a region of target "
                         f"{target.name!r}; its regions are {', '.join(r.name for r in target.regions)}")
    capacity = {}
    for region in target.regions:
        size = region.size
        if region.on_chip and options.sram_limit is not None:
            size = min(size, options.sram_limit)
        capacity[region.name] = 0 if region.name in reserved else size
    return capacity


def home_region(target: Target, options: DeploymentOptions):
    """Region of the fixed items (rule 1): largest DMA-reachable on-chip data RAM not reserved."""
    usable = [r for r in target.regions if r.writable and r.holds_data and r.name not in options.reserve_regions]
    on_chip = [r for r in usable if r.on_chip] or usable or list(target.regions)
    return max(on_chip, key=lambda r: (r.dma_access, r.size))


def _arena_candidates(target: Target, options: DeploymentOptions) -> list:
    if options.activation_region is not None:
        region = target.region(options.activation_region)   # names the target's regions if unknown
        if not region.writable:
            raise UsageError(f"activation_region {region.name!r} of target {target.name!r} is read-only")
        return [region]
    has_npu = target.npu is not None
    return [r for r in target.regions
            if r.writable and r.holds_data and r.name not in options.reserve_regions
            and (r.on_chip or options.external_activations) and (r.npu_access or not has_npu)]


def choose_arena_region(target: Target, arena_bytes: int, free: dict[str, int],
                        options: DeploymentOptions) -> tuple[MemoryRegion, bool, str]:
    """(region, fits, reason) of the arena (rule 2)."""
    candidates = _arena_candidates(target, options)
    if not candidates:
        raise UsageError(f"target {target.name!r} has no writable region that may hold activations "
                         "with these options (reserve_regions, external_activations, npu_access)")
    fitting = [r for r in candidates if free[r.name] >= arena_bytes]
    if fitting:
        best = max(fitting, key=lambda r: (r.on_chip, r.speed, -r.latency_cycles, free[r.name]))
        faster = [r.name for r in candidates if r.speed > best.speed and r.on_chip >= best.on_chip]
        reason = (f"fastest region that holds {arena_bytes} bytes ({best.speed / 1e6:g} MB/s)"
                  + (f"; {', '.join(faster)} faster but too small" if faster else ""))
        if not best.on_chip:
            reason += "; no on-chip region holds it: activations are OFF CHIP"
        return best, True, reason
    best = max(candidates, key=lambda r: (free[r.name], r.on_chip))
    on_chip = [r for r in candidates if r.on_chip]
    largest = max(on_chip, key=lambda r: free[r.name]) if on_chip else None
    return best, False, (f"no allowed region holds {arena_bytes} bytes: the largest, {best.name}, has "
                         f"{free[best.name]} free" + (f"; the largest on chip, {largest.name}, {free[largest.name]}"
                                                      if largest is not None and largest is not best else ""))


def external_arena_region(target: Target, options: DeploymentOptions):
    """Rule 4: the region of a graph split's external arena: ``[split] region``, else the
    largest writable external RAM (PSRAM, SDRAM) of the target."""
    if options.external_region is not None:
        region = target.region(options.external_region)   # names the target's regions if unknown
        if not region.writable or not region.holds_data:
            raise UsageError(f"[split] region {region.name!r} of target {target.name!r} cannot hold data")
        return region
    external = [r for r in target.regions if r.writable and r.holds_data and not r.on_chip
                and r.name not in options.reserve_regions]
    if not external:
        raise UsageError(f"target {target.name!r} has no external RAM for a graph split's tensors; "
                         "its regions are " + ", ".join(r.name for r in target.regions)
                         + " (give one with [split] region)")
    return max(external, key=lambda r: r.size)


def place_regions(graph: Graph, arena_bytes: int, target: Target, options: DeploymentOptions,
                  fixed: dict[str, int], external_bytes: int = 0, *, plan: MemoryPlan | None = None,
                  weight_sizes: dict[str, int] | None = None) -> RegionPlacement:
    """Assign the fixed items, the arena and the weights to regions (module docstring);
    ``external_bytes``: the external arena of a graph split (rule 4); ``plan``: the memory
    plan, needed to split the arena over banks (rule 5); ``weight_sizes``: the bytes each
    constant takes as compiled (:func:`~mcudeploy.kernels.emitted_arrays.stored_sizes`: the
    kernel layouts and requantization arrays with it; default its graph bytes)."""
    capacity = _capacities(target, options)
    home = home_region(target, options)
    free = dict(capacity)
    free[home.name] -= sum(fixed.values())
    used = {home.name: sum(fixed.values())}
    region, fits, reason = choose_arena_region(target, arena_bytes, free, options)
    split = None
    if (not fits or not region.on_chip) and options.split_arena and plan is not None \
            and options.activation_region is None:
        split = split_over_banks(plan, _banks(target, options, free))
        if fits and not split.fits:
            split = None            # the whole arena in external RAM stays the answer
    placement = RegionPlacement(region.name, fits, home.name, {}, used, dict(capacity),
                                {"activations": reason,
                                 "fixed items": f"largest on-chip data RAM the DMA reaches ({home.name})"})
    if split is not None and split.fits:
        _apply_split(placement, split, target, free, arena_bytes)
    else:
        used[region.name] = used.get(region.name, 0) + arena_bytes
        if not region.on_chip:
            placement.off_chip.append(f"activations ({arena_bytes} bytes) in {region.name}")
        if split is not None:
            placement.reasons["activations"] += f"; split over the banks: {split.reason}"
    if external_bytes:
        _place_external(target, options, external_bytes, free, placement)
    if not placement.arena_fits:
        placement.notes.append(f"the activation arena ({arena_bytes} bytes) fits no allowed region"
                               + (" even split over the banks" if split is not None else ""))
    elif not placement.arena_banks:
        free[region.name] -= arena_bytes
        placement.seconds["activations"] = _arena_traffic(graph) / region.speed
    fits = placement.arena_fits
    vendor = target.npu is not None and options.executor == "vendor-npu"   # rule 3: the vendor's placement
    auto_copy = slow_flash(target) and not vendor
    allow_copy = fits and options.weights != "flash" and (options.weights == "ram" or auto_copy)
    cost = _copy_cost(graph, target, dict(free), placement) if fits and options.weights == "auto" \
        and slow_flash(target) and not auto_copy else ""
    _place_weights(graph, target, free, placement, allow_copy, vendor, weight_sizes or {},
                   budget=options.weights_ram_limit)
    if cost:
        placement.reasons["weights"] += "; " + cost
    return placement


def _copy_cost(graph: Graph, target: Target, free: dict[str, int], placement: RegionPlacement) -> str:
    """Rule 3 on an NPU target: what copying the hot weights (``weights = "ram"``) would cost."""
    trial = RegionPlacement(placement.arena_region, True, placement.home_region, {}, {}, {})
    _place_weights(graph, target, free, trial, True)
    flash = _home_flash(target)
    where = _copied_bytes(graph, trial, flash.name if flash is not None else None)
    return (f"kept there as the NPU vendor places them; --weights-to-ram would copy the hot ones "
            f"into on-chip RAM ({where})") if where else ""


def _banks(target: Target, options: DeploymentOptions, free: dict[str, int]) -> list[Bank]:
    """Rule 5: the regions the arena may use, fastest on-chip first, external RAM last."""
    candidates = sorted(_arena_candidates(target, options),
                        key=lambda r: (not r.on_chip, -r.speed, r.latency_cycles, -free[r.name], r.name))
    return [Bank(r.name, free[r.name]) for r in candidates if free[r.name] > 0]


def _apply_split(placement: RegionPlacement, split, target: Target, free: dict[str, int], arena_bytes: int) -> None:
    """Write a fitting bank split into ``placement`` (rule 5)."""
    regions = {r.name: r for r in target.regions}
    placement.arena_banks, placement.bank_of = dict(split.bank_bytes), dict(split.placements)
    placement.unshared = set(split.unshared)
    placement.arena_region = max(split.bank_bytes, key=lambda r: (split.bank_bytes[r], r))
    placement.arena_fits = True
    for bank, size in split.bank_bytes.items():
        placement.used[bank] = placement.used.get(bank, 0) + size
        free[bank] -= size
        if not regions[bank].on_chip:
            placement.off_chip.append(f"{len(split.tensors_in[bank])} activation tensor(s) ({size} bytes) "
                                      f"in {bank} (split arena)")
    shares = ", ".join(f"{bank} {size}" for bank, size in split.bank_bytes.items())
    placement.reasons["activations"] = (f"no single on-chip region holds {arena_bytes} bytes: split arena over "
                                        f"{len(split.bank_bytes)} banks ({shares} bytes)")


def _place_external(target: Target, options: DeploymentOptions, size: int, free: dict[str, int],
                    placement: RegionPlacement) -> None:
    region = external_arena_region(target, options)
    if region.name == placement.arena_region:
        raise UsageError(f"graph split: the on-chip arena ({placement.used.get(region.name, 0)} bytes) fits "
                         f"no on-chip region, so it landed in {region.name!r} with the external one; tile more "
                         "layers ([tiling]), spill more tensors ([split] auto), or set external_activations = "
                         "false to see the overflow")
    placement.external_region, placement.external_bytes = region.name, size
    placement.used[region.name] = placement.used.get(region.name, 0) + size
    placement.reasons["external activations"] = f"graph split: the tensors that cross a cut ({region.name})"
    placement.off_chip.append(f"graph split: {size} bytes of spilled tensors in {region.name}")
    if free[region.name] < size:
        placement.notes.append(f"the external arena ({size} bytes) does not fit {region.name} "
                               f"({free[region.name]} bytes free)")
    free[region.name] -= size


def no_target_placement(graph: Graph, arena_bytes: int, fixed: dict[str, int],
                        external_bytes: int = 0) -> RegionPlacement:
    """Without a target: one ``arena`` (and an ``external`` one for a graph split), weights
    in ``flash``, nothing to overflow."""
    weights = {value.name: NO_TARGET_WEIGHTS for value in graph.constants()}
    used = {NO_TARGET_ARENA: arena_bytes, NO_TARGET_HOME: sum(fixed.values()),
            NO_TARGET_WEIGHTS: sum(v.nbytes for v in graph.constants())}
    if external_bytes:
        used[NO_TARGET_EXTERNAL] = external_bytes
    return RegionPlacement(NO_TARGET_ARENA, True, NO_TARGET_HOME, weights, used,
                           {name: None for name in used}, {"activations": "no target: one arena"},
                           external_region=NO_TARGET_EXTERNAL if external_bytes else None,
                           external_bytes=external_bytes)


def _home_flash(target: Target):
    """The flash the weights are stored in: the target's largest (None without flash)."""
    flash = [r for r in target.regions if r.kind == "flash"]
    return max(flash, key=lambda r: r.size) if flash else None


def _cached_bytes(target: Target, home) -> int:
    """Bytes of the cache the core reads ``home`` through (0 without one, or without flash)."""
    return home.cache_in_front(target.core.dcache_bytes)[1] if home is not None else 0


def slow_flash(target: Target) -> bool:
    """True when the weights' home flash is ``SLOW_FLASH_RATIO`` x slower than on-chip RAM."""
    home = _home_flash(target)
    ram = [r for r in target.regions if r.on_chip and r.writable]
    if home is None or not ram:
        return False
    return max(r.speed for r in ram) >= SLOW_FLASH_RATIO * home.speed


def _copied_bytes(graph: Graph, placement: RegionPlacement, home: str | None,
                  sizes: dict[str, int] | None = None) -> str:
    """``"78064 bytes of npuRAM3"``: the on-chip RAM the copied weights take, per region
    (``sizes``: the bytes as compiled, default the graph's)."""
    per_region: dict[str, int] = {}
    for value in graph.constants():
        region = placement.weights.get(value.name)
        if region is not None and region != home:
            per_region[region] = per_region.get(region, 0) + (sizes or {}).get(value.name, value.nbytes)
    return ", ".join(f"{size} bytes of {region}" for region, size in sorted(per_region.items()))


def _arena_traffic(graph: Graph) -> int:
    """Bytes read and written in the arena: every node's activation inputs and outputs once."""
    return sum(v.nbytes for node in graph.nodes for v in [*node.inputs, *node.outputs]
               if v is not None and not v.is_constant)


def _weight_reads(graph: Graph, cached: int = 0, sizes: dict[str, int] | None = None) -> list[tuple[Value, int]]:
    """(weight, reads by its kernels), the most reads (= saving per byte) first. A tensor of at
    most ``cached`` bytes (the cache in front of the flash, :meth:`MemoryRegion.cache_in_front`)
    misses once and is then read from the cache, as the estimator charges it: it comes after
    every tensor that does not fit (a U-Net's 18 KB first-level filters behind the M55's 32 KB
    D-cache gain nothing from a copy; its 110 KB decoder filters stream from flash)."""
    reads: dict[str, tuple[Value, int]] = {}
    for node in graph.nodes:
        for value in node.inputs:
            if value is not None and value.is_constant:
                previous = reads.get(value.name, (value, 0))[1]
                reads[value.name] = (value, previous + weight_reads(node))
    fits_cache = lambda value: (sizes or {}).get(value.name, value.nbytes) <= cached     # noqa: E731
    return sorted(reads.values(), key=lambda item: (fits_cache(item[0]), -item[1]))


def hot_weight_budgets(graph: Graph, target: Target, shares: tuple[float, ...] = (0.25, 0.5, 0.75)
                       ) -> tuple[int, ...]:
    """``[weights] ram_limit`` values worth trying: for each share, the bytes of the most-read
    weights (rule 3's order, on ``target``'s flash and cache) whose copy removes that share of
    the weights' flash traffic (``nbytes x reads``), rounded up to 1 KiB; distinct and
    increasing. Deep filters re-read at every pixel of a level cost the same traffic at every
    level of a U-Net, the shallow ones for a quarter of the bytes."""
    cached = _cached_bytes(target, _home_flash(target))
    reads = [(value, 1 if value.nbytes <= cached else count) for value, count in _weight_reads(graph, cached)]
    total = sum(value.nbytes * count for value, count in reads)
    budgets: list[int] = []
    if not total:
        return ()
    for share in shares:
        moved = size = 0
        for value, count in reads:
            if moved >= share * total:
                break
            moved, size = moved + value.nbytes * count, size + value.nbytes
        rounded = -(-size // 1024) * 1024
        if rounded and rounded not in budgets:
            budgets.append(rounded)
    return tuple(budgets)


def _place_weights(graph: Graph, target: Target, free: dict[str, int], placement: RegionPlacement,
                   allow_on_chip: bool, vendor: bool = False, sizes: dict[str, int] | None = None, *,
                   budget: int | None = None) -> None:
    """Rule 3; ``budget`` (``[weights] ram_limit``): the most on-chip bytes the copies take, the
    most-read tensors first; one that does not fit what is left of it stays in flash and the
    next, smaller ones may still be copied (a greedy knapsack by saving per byte)."""
    on_chip = sorted((r for r in target.regions if r.on_chip and r.writable and r.holds_data
                      and allow_on_chip and free[r.name] > 0), key=lambda r: -r.speed)
    home = _home_flash(target)
    left = math.inf if budget is None or home is None else budget
    for value, count in _weight_reads(graph, _cached_bytes(target, home), sizes):
        size = (sizes or {}).get(value.name, value.nbytes)
        region = next((r for r in on_chip if free[r.name] >= size), None) if size <= left else None
        better = region is not None and (home is None or region.speed > home.speed)
        if home is not None and not (better and count > 1):
            region = home
        elif region is not None:
            left -= size
        if region is None:
            region = max(target.regions, key=lambda r: free[r.name])
            placement.notes.append(f"weight {value.name!r} ({size} bytes) fits no region")
        free[region.name] -= size
        placement.used[region.name] = placement.used.get(region.name, 0) + size
        placement.weights[value.name] = region.name
        placement.seconds[value.name] = value.nbytes * count / region.speed
    copied = sum(1 for name, region in placement.weights.items() if home is None or region != home.name)
    if copied:
        placement.reasons["weights"] = (f"{copied} hot weight tensor(s) copied to on-chip RAM "
                                        + ("(weights = ram)" if home is None or not slow_flash(target)
                                           else f"({home.name} is >= {SLOW_FLASH_RATIO:g}x slower than on-chip RAM)"))
        if vendor:                      # rule 3: say what leaving the vendor's placement costs
            placement.reasons["weights"] = f"{copied} hot weight tensor(s) copied to on-chip RAM (weights = ram): " + \
                _copied_bytes(graph, placement, home.name if home is not None else None)
    elif home is not None:
        placement.reasons["weights"] = f"stored in {home.name} ({home.speed / 1e6:g} MB/s)"
    if budget is not None and home is not None and allow_on_chip:
        placement.reasons["weights"] += (f"; [weights] ram_limit {budget} bytes: "
                                         f"{_copied_bytes(graph, placement, home.name, sizes) or 'nothing'} copied, "
                                         f"the most-read first, the rest stays in {home.name}")
