"""The memory ledger: every byte the deployed model needs, per memory region, against capacity.

Input: the graph, its :class:`~.memory_plan.MemoryPlan`, an optional target and the user's
limits. Output: :class:`Ledger` - one :class:`LedgerLine` per item and one
:class:`RegionUse` per region:

    weights              constants, in the region :mod:`.placement` chose (flash by default)
    activations (peak)   the planned arena (incl. scratch / NPU work buffers)
    inputs, outputs      application buffers when they are not in the arena (--no-io-in-arena)
    work buffers         the largest per-op scratch (already inside the arena, shown for reading)
    runtime state        RUNTIME_BASE + RUNTIME_PER_NODE x nodes (tensor / node descriptors)
    stack                --stack (default DEFAULT_STACK)
    application reserve  --reserve
    overflow(region)     max(0, used - capacity),  capacity = region size (on-chip: min(size, --sram-limit))

A model that does not fit is a result, not an error: the ledger names the regions over
capacity by how many bytes, and the step of the arena's peak with the tensors alive there.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph
from .fit import byte_text
from .memory_plan import MemoryPlan
from .placement import place_regions

DEFAULT_STACK = 4096
RUNTIME_BASE = 256
RUNTIME_PER_NODE = 64


@dataclass(frozen=True)
class LedgerLine:
    item: str
    region: str
    bytes: int
    note: str = ""


@dataclass(frozen=True)
class RegionUse:
    region: str
    kind: str
    capacity: int | None
    used: int

    @property
    def overflow(self) -> int:
        return 0 if self.capacity is None else max(0, self.used - self.capacity)


@dataclass
class Ledger:
    lines: list[LedgerLine]
    regions: list[RegionUse]
    peak_step: int
    peak_node: str
    peak_tensors: list[tuple[str, int]]
    notes: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return all(region.overflow == 0 for region in self.regions) and not self.notes

    def verdict(self) -> str:
        """One paragraph: fits, or what overflows by how much and what is alive at the peak."""
        if self.fits:
            return "fits: " + ", ".join(f"{r.region} {r.used}/{r.capacity} bytes" for r in self.regions
                                        if r.capacity is not None and r.used)
        over = [f"{r.region} by {byte_text(r.overflow)} ({r.used} bytes used of {r.capacity})"
                for r in self.regions if r.overflow]
        alive = ", ".join(f"{name} ({size} bytes)" for name, size in self.peak_tensors[:6])
        return (f"does not fit: {'; '.join(over + self.notes)}. Activations peak at step {self.peak_step} "
                f"(node {self.peak_node!r}) with {alive} alive. Lower the peak (smaller or "
                f"re-ordered layers), move weights or activations to external memory, or raise the limit.")


def build_ledger(graph: Graph, plan: MemoryPlan, target=None, *, sram_limit: int | None = None,
                 reserve: int = 0, stack: int = DEFAULT_STACK,
                 copy_weights_to_ram: bool = False) -> Ledger:
    """The ledger of ``plan`` on ``target`` (module docstring)."""
    runtime_state = RUNTIME_BASE + RUNTIME_PER_NODE * len(graph.nodes)
    io_bytes = {"inputs": 0, "outputs": 0} if plan.io_in_arena else {
        "inputs": sum(v.nbytes for v in graph.inputs), "outputs": sum(v.nbytes for v in graph.outputs)}
    fixed = {"runtime state": runtime_state, "stack": stack, "application reserve": reserve, **io_bytes}
    weights_bytes = {v.name: v.nbytes for v in graph.constants()}
    if target is None:
        home, regions = "sram", None
        arena_region, weight_region = "sram", {name: "flash" for name in weights_bytes}
        notes = []
    else:
        home = target.largest_sram.name if target.largest_sram else target.regions[0].name
        placement = place_regions(graph, plan.arena_bytes, _limited(target, sram_limit),
                                  {home: sum(fixed.values())}, copy_weights_to_ram)
        arena_region, weight_region, notes = placement.arena_region or home, placement.weights, placement.notes
        regions = target.regions
    lines = _lines(plan, fixed, home, arena_region, weight_region, weights_bytes)
    step, alive = plan.peak_step()
    return Ledger(lines, _region_uses(lines, regions, sram_limit), step,
                  plan.order[step] if plan.order else "", [(p.name, p.size) for p in alive], notes)


def _limited(target, sram_limit: int | None):
    if sram_limit is None:
        return target
    from dataclasses import replace
    return replace(target, regions=tuple(replace(r, size=min(r.size, sram_limit)) if r.on_chip else r
                                         for r in target.regions))


def _lines(plan, fixed, home, arena_region, weight_region, weights_bytes) -> list[LedgerLine]:
    lines = []
    for region in sorted(set(weight_region.values())):
        total = sum(weights_bytes[n] for n, r in weight_region.items() if r == region)
        lines.append(LedgerLine("weights", region, total, f"{sum(1 for r in weight_region.values() if r == region)} tensors"))
    lines.append(LedgerLine("activations (peak)", arena_region, plan.arena_bytes,
                            f"live-set bound {plan.lower_bound_bytes}, reuse rate {plan.reuse_rate:.0%}"))
    for item in ("inputs", "outputs"):
        lines.append(LedgerLine(item, home, fixed[item], "in the arena" if plan.io_in_arena else "application buffers"))
    largest = max((p.size for p in plan.scratch.values()), default=0)
    lines.append(LedgerLine("work buffers (NPU / im2col)", arena_region, 0,
                            f"largest {largest} bytes, inside the arena"))
    for item in ("runtime state", "stack", "application reserve"):
        lines.append(LedgerLine(item, home, fixed[item]))
    return lines


def _region_uses(lines: list[LedgerLine], regions, sram_limit: int | None) -> list[RegionUse]:
    used: dict[str, int] = {}
    for line in lines:
        used[line.region] = used.get(line.region, 0) + line.bytes
    if regions is None:
        return [RegionUse("sram", "sram", sram_limit, used.get("sram", 0)),
                RegionUse("flash", "flash", None, used.get("flash", 0))]
    uses = []
    for region in regions:
        capacity = min(region.size, sram_limit) if (region.on_chip and sram_limit is not None) else region.size
        uses.append(RegionUse(region.name, region.kind, capacity, used.get(region.name, 0)))
    return uses
