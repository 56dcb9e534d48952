"""The memory ledger: every byte the deployed model needs, per memory region, against capacity.

Input: the graph, its :class:`~.memory_plan.MemoryPlan`, an optional target and the user's
limits. Output: :class:`Ledger` - one :class:`LedgerLine` per item and one
:class:`RegionUse` per region:

    weights              constants, in the region :mod:`.placement` chose (flash by default):
                         the arrays ``network_data.c`` holds there when the deployment's arrays
                         are known (:mod:`mcudeploy.kernels.emitted_arrays`, the listing the code
                         generator writes: the kernel variants' layouts, the per-channel
                         requantization arrays, each array aligned to 16 B), else the graph's
                         constants as it holds them (a model the integer kernels cannot prepare)
    weights (load image) the initial values of the weights copied to RAM: the start-up code
                         copies them from the target's flash (the linker's ``AT > FLASH``), so
                         flash holds them too: the bytes of the writable regions' weight lines
                         (without the arrays: sum of align_up(bytes, LOAD_ALIGNMENT)) in the
                         largest flash region (none without a target or a flash region)
    activations (peak)   the planned arena (incl. scratch / NPU work buffers)
    activations (graph split, external)   the external arena of the tensors that cross a cut
    inputs, outputs      application buffers when they are not in the arena (--no-io-in-arena)
    work buffers         the largest per-op scratch (already inside the arena, shown for reading)
    runtime state        RUNTIME_BASE + RUNTIME_PER_NODE x nodes (tensor / node descriptors)
    stack                --stack (default DEFAULT_STACK)
    application reserve  --reserve
    overflow(region)     max(0, used - capacity),  capacity = region size (on-chip: min(size,
                         sram_limit); 0 for a region in reserve_regions)

The regions come from :func:`~.placement.place_regions`, computed once per deployment; the
ledger only adds them up.

A model that does not fit is a result, not an error: the ledger names the regions over
capacity by how many bytes, and the step of the arena's peak with the tensors alive there.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ir import Graph
from ..kernels.emitted_arrays import EmittedArray, region_bytes
from ..options import DeploymentOptions
from ..units import byte_text
from .buffers import align_up
from .memory_plan import MemoryPlan
from .placement import RegionPlacement

if TYPE_CHECKING:
    from ..targets import Target

DEFAULT_STACK = 4096
LOAD_ALIGNMENT = 16          # each weight array's alignment in the generated network_data.c
RUNTIME_BASE = 256
RUNTIME_PER_NODE = 64
NOTHING_STORED = {"bytes": 0, "graph": 0, "layout": 0, "call": 0, "alignment": 0}   # a region no array is in


@dataclass(frozen=True)
class LedgerLine:
    """One item of the memory ledger: what, where, how many bytes."""
    item: str
    region: str
    bytes: int
    note: str = ""


@dataclass(frozen=True)
class RegionUse:
    """Bytes used in one region against its capacity."""
    region: str
    kind: str
    capacity: int | None
    used: int

    @property
    def overflow(self) -> int:
        return 0 if self.capacity is None else max(0, self.used - self.capacity)


@dataclass
class Ledger:
    """Every byte per region against capacity, and the fit verdict."""
    lines: list[LedgerLine]
    regions: list[RegionUse]
    peak_step: int
    peak_node: str
    peak_tensors: list[tuple[str, int]]
    notes: list[str] = field(default_factory=list)
    off_chip: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return all(region.overflow == 0 for region in self.regions) and not self.notes

    def verdict(self) -> str:
        """One paragraph: fits, or what overflows by how much and what is alive at the peak."""
        if self.fits:
            used = [f"{r.region} {r.used}/{r.capacity} bytes" for r in self.regions if r.capacity is not None and r.used]
            text = "fits: " + (", ".join(used) or "no target, no capacity to check")
            if self.off_chip:
                text += ("; OFF CHIP: " + "; ".join(self.off_chip) + " (external memory is several "
                         "times slower; see the latency estimate)")
            return text
        over = [f"{r.region} by {byte_text(r.overflow)} ({r.used} bytes used of {r.capacity})"
                for r in self.regions if r.overflow]
        alive = ", ".join(f"{name} ({size} bytes)" for name, size in self.peak_tensors[:6])
        return (f"does not fit: {'; '.join(over + self.notes)}. Activations peak at step {self.peak_step} "
                f"(node {self.peak_node!r}) with {alive} alive. Lower the peak (smaller or "
                f"re-ordered layers), move weights or activations to external memory, or raise the limit.")


def fixed_items(graph: Graph, plan: MemoryPlan, options: DeploymentOptions) -> dict[str, int]:
    """Bytes of the items that are not the arena nor weights (module docstring)."""
    io_bytes = {"inputs": 0, "outputs": 0} if plan.io_in_arena else {
        "inputs": sum(v.nbytes for v in graph.inputs), "outputs": sum(v.nbytes for v in graph.outputs)}
    return {"runtime state": RUNTIME_BASE + RUNTIME_PER_NODE * len(graph.nodes), "stack": options.stack,
            "application reserve": options.reserve, **io_bytes}


def build_ledger(graph: Graph, plan: MemoryPlan, placement: RegionPlacement, target: Target | None,
                 options: DeploymentOptions, arrays: list[EmittedArray] | None = None) -> Ledger:
    """The ledger of ``plan`` as placed by ``placement`` on ``target`` (module docstring);
    ``arrays``: what ``network_data.c`` will hold (None: count the graph's constants)."""
    fixed = fixed_items(graph, plan, options)
    weights_bytes = {v.name: v.nbytes for v in graph.constants()}
    stored = region_bytes(arrays) if arrays is not None else None
    lines = _lines(plan, fixed, placement, weights_bytes, stored)
    image = load_image(placement.weights, weights_bytes, target, stored)
    if image is not None:
        lines.insert(sum(1 for line in lines if line.item == "weights"), image)
    step, alive = plan.peak_step()
    regions = _region_uses(lines, target, placement)
    shown = {v.name: v.display_name for node in graph.nodes for v in node.outputs}   # the model's names
    shown.update({v.name: v.display_name for v in graph.inputs})
    return Ledger(lines, regions, step, plan.order[step] if plan.order else "",
                  [(shown.get(p.name, p.name), p.size) for p in alive], list(placement.notes),
                  list(placement.off_chip))


def load_image(weight_region: dict[str, str], weights_bytes: dict[str, int], target: Target | None,
               stored: dict[str, dict[str, int]] | None = None) -> LedgerLine | None:
    """The flash bytes of the weights placed in writable RAM (module docstring), or None."""
    if target is None:
        return None
    flash = max(target.regions_of_kind("flash"), key=lambda r: r.size, default=None)
    writable = {r.name for r in target.regions if r.writable}
    copied = [name for name, region in weight_region.items() if region in writable]
    if flash is None or not copied:
        return None
    if stored is not None:
        size = sum(totals["bytes"] for region, totals in stored.items() if region in writable)
    else:
        size = sum(align_up(weights_bytes[name], LOAD_ALIGNMENT) for name in copied)
    return LedgerLine("weights (load image)", flash.name, size,
                      f"{len(copied)} tensors copied to RAM at start-up; their initial values stay in flash")


def weight_line(region: str, names: list[str], weights_bytes: dict[str, int],
                stored: dict[str, int] | None) -> LedgerLine:
    """The weights of one region: as compiled (``stored``, from :func:`region_bytes`) or as the graph holds them."""
    graph_bytes = sum(weights_bytes[n] for n in names)
    if stored is None:
        return LedgerLine("weights", region, graph_bytes, f"{len(names)} tensors")
    return LedgerLine("weights", region, stored["bytes"],
                      f"{len(names)} tensors ({graph_bytes} B in the graph); compiled: {stored['graph']} B as in the "
                      f"graph, {stored['layout']} B kernel layouts, {stored['call']} B requantization, "
                      f"{stored['alignment']} B padding")


def _lines(plan: MemoryPlan, fixed: dict[str, int], placement: RegionPlacement,
           weights_bytes: dict[str, int], stored: dict[str, dict[str, int]] | None) -> list[LedgerLine]:
    lines = []
    weight_region = placement.weights
    for region in sorted(set(weight_region.values()) | set(stored or {})):
        names = [n for n, r in weight_region.items() if r == region]
        lines.append(weight_line(region, names, weights_bytes, None if stored is None else stored.get(region, NOTHING_STORED)))
    if placement.arena_banks:       # a split arena (plan/arena_banks.py): one line per bank
        for bank, size in placement.arena_banks.items():
            count = sum(1 for region, _ in placement.bank_of.values() if region == bank)
            lines.append(LedgerLine("activations (split arena bank)", bank, size,
                                    f"{count} tensors; one arena of {plan.arena_bytes} bytes fits no region"))
    else:
        lines.append(LedgerLine("activations (peak)", placement.arena_region, plan.arena_bytes,
                                f"live-set bound {plan.no_reuse_bound_bytes}, reuse rate {plan.reuse_rate:.0%}"))
    if placement.external_region is not None:
        lines.append(LedgerLine("activations (graph split, external)", placement.external_region,
                                plan.external_bytes, f"{len(plan.external)} tensors, "
                                                     f"{len(plan.transfers)} copies (network_copy)"))
    for item in ("inputs", "outputs"):
        lines.append(LedgerLine(item, placement.home_region, fixed[item],
                                "in the arena" if plan.io_in_arena else "application buffers"))
    largest = max((p.size for p in plan.scratch.values()), default=0)
    lines.append(LedgerLine("work buffers (NPU / im2col)", placement.arena_region, 0,
                            f"largest {largest} bytes, inside the arena"))
    for item in ("runtime state", "stack", "application reserve"):
        lines.append(LedgerLine(item, placement.home_region, fixed[item]))
    return lines


def _region_uses(lines: list[LedgerLine], target: Target | None, placement: RegionPlacement) -> list[RegionUse]:
    used: dict[str, int] = {}
    for line in lines:
        used[line.region] = used.get(line.region, 0) + line.bytes
    if target is None:
        return [RegionUse(name, name, None, used.get(name, 0)) for name in placement.used]
    return [RegionUse(region.name, region.kind, placement.capacity.get(region.name, region.size),
                      used.get(region.name, 0)) for region in target.regions]
