"""Placement across memory regions: the activation arena and each weight tensor -> a region.

Input: a graph, its :class:`~.memory_plan.MemoryPlan`, a :class:`~mcudeploy.targets.Target`
and the bytes of each region already taken (stack, runtime state, application reserve).
Output: :class:`RegionPlacement` (region of the arena and of every constant, bytes used per
region, estimated access time of each choice).

Rules:
1. The arena goes where :func:`arena_region` says (the same rule the memory plan and the
   generated code use): on-chip before PSRAM, NPU-reachable first on an NPU target, then
   the largest region with room; else it does not fit (the ledger says so).
2. Weights stay where they are stored (flash). They are copied to on-chip RAM only when
   that flash is slow — at least ``SLOW_FLASH_RATIO`` times below the fastest on-chip RAM's
   bandwidth, as external octo/quad-SPI flash is (reads cost 2-20x) — or when
   the user asks (``copy_weights_to_ram``, ``plan --weights-to-ram``), and only into the
   room left after the arena (none when the arena did not fit anywhere): then the *hot*
   ones move, by saved time per byte. Internal flash is the default home because on-chip
   RAM is what the application needs for everything else (X-CUBE-AI and TFLite Micro keep
   weights in flash too). A weight tensor is read once per output pixel
   of its node (the C kernels re-read the filter for every pixel), so

       traffic(weight) = nbytes x reads,   time(region) = traffic / bandwidth(region)
       saving per byte = reads x (1 / bandwidth(flash) - 1 / bandwidth(sram))

3. Without a flash region weights go to the largest region with room.
A region with unknown bandwidth (0) is treated as 100 MB/s for the estimate.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..ir import Graph, Node, Value

DEFAULT_BANDWIDTH = 100e6
SLOW_FLASH_RATIO = 4.0   # flash this much slower than on-chip RAM: weights worth copying


@dataclass
class RegionPlacement:
    arena_region: str | None
    weights: dict[str, str]
    used: dict[str, int]
    seconds: dict[str, float] = field(default_factory=dict)   # item -> estimated access time
    notes: list[str] = field(default_factory=list)


def arena_region(target, arena_bytes: int = 0, free: dict[str, int] | None = None) -> str:
    """Region of the activation arena ("arena" without a target): among the writable regions
    with room for ``arena_bytes`` (``free`` bytes left per region, default their sizes),
    on-chip before external RAM; on an NPU target the NPU-reachable, highest-bandwidth bank
    (the NPU streams every activation through it); on a CPU-only target the largest: a
    general-purpose SRAM rather than a small fast bank (CCM, DTCM), because DMA engines that
    fill inputs can usually reach it and the small banks stay free for the application
    (X-CUBE-AI places activations the same way by default).
    When nothing has room: the largest on-chip region (the ledger then reports the overflow).
    """
    if target is None:
        return "arena"
    free = free if free is not None else {r.name: r.size for r in target.regions}
    writable = [r for r in target.regions if r.writable]
    fitting = [r for r in writable if free.get(r.name, 0) >= arena_bytes]
    has_npu = target.npu is not None
    best = max(fitting or writable or target.regions,
               key=lambda r: (r.on_chip, has_npu and r.npu_access, has_npu and _bandwidth(r),
                              free.get(r.name, 0)))
    return best.name


def weight_regions(graph: Graph, target) -> dict[str, str]:
    """Default region of each constant: the largest flash region ("flash" without a target)."""
    flash = [r for r in target.regions if r.kind == "flash"] if target is not None else []
    name = max(flash, key=lambda r: r.size).name if flash else ("flash" if target is None
                                                                   else arena_region(target))
    return {value.name: name for value in graph.constants()}


def _bandwidth(region) -> float:
    return region.bandwidth or DEFAULT_BANDWIDTH


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


def place_regions(graph: Graph, arena_bytes: int, target, taken: dict[str, int] | None = None,
                  copy_weights_to_ram: bool = False) -> RegionPlacement:
    """Assign the arena and the weights to regions (module docstring)."""
    taken = dict(taken or {})
    free = {r.name: r.size - taken.get(r.name, 0) for r in target.regions}
    chosen = next(r for r in target.regions if r.name == arena_region(target, arena_bytes, free))
    arena = chosen if chosen.writable and free[chosen.name] >= arena_bytes else None
    placement = RegionPlacement(arena.name if arena else None, {}, dict(taken))
    if arena is None:
        placement.notes.append(f"the activation arena ({arena_bytes} bytes) fits no writable region")
    else:
        free[arena.name] -= arena_bytes
        placement.used[arena.name] = placement.used.get(arena.name, 0) + arena_bytes
        placement.seconds["activations"] = _arena_traffic(graph) / _bandwidth(arena)
    _place_weights(graph, target, free, placement,
                   allow_on_chip=arena is not None and (copy_weights_to_ram or _slow_flash(target)))
    return placement


def _slow_flash(target) -> bool:
    """True when the weights' home flash is ``SLOW_FLASH_RATIO`` x slower than on-chip RAM."""
    flash = [r for r in target.regions if r.kind == "flash"]
    ram = [r for r in target.regions if r.on_chip and r.writable]
    if not flash or not ram:
        return False
    home = max(flash, key=lambda r: r.size)
    return max(_bandwidth(r) for r in ram) >= SLOW_FLASH_RATIO * _bandwidth(home)


def _arena_traffic(graph: Graph) -> int:
    """Bytes read and written in the arena: every node's activation inputs and outputs once."""
    return sum(v.nbytes for node in graph.nodes for v in [*node.inputs, *node.outputs]
               if v is not None and not v.is_constant)


def _place_weights(graph: Graph, target, free: dict[str, int], placement: RegionPlacement,
                   allow_on_chip: bool) -> None:
    reads: dict[str, tuple[Value, int]] = {}
    for node in graph.nodes:
        for value in node.inputs:
            if value is not None and value.is_constant:
                previous = reads.get(value.name, (value, 0))[1]
                reads[value.name] = (value, previous + weight_reads(node))
    flash = sorted((r for r in target.regions if r.kind == "flash"), key=lambda r: -r.size)
    on_chip = sorted((r for r in target.regions if r.on_chip and r.writable and allow_on_chip),
                     key=lambda r: -_bandwidth(r))
    home = flash[0] if flash else None
    hot = sorted(reads.values(), key=lambda item: -item[1])       # most reads per byte first
    for value, count in hot:
        region = next((r for r in on_chip if free[r.name] >= value.nbytes), None)
        better = region is not None and (home is None or _bandwidth(region) > _bandwidth(home))
        if home is not None and not (better and count > 1):
            region = home
        if region is None:
            region = max(target.regions, key=lambda r: free[r.name])
            placement.notes.append(f"weight {value.name!r} ({value.nbytes} bytes) fits no region")
        free[region.name] -= value.nbytes
        placement.used[region.name] = placement.used.get(region.name, 0) + value.nbytes
        placement.weights[value.name] = region.name
        placement.seconds[value.name] = value.nbytes * count / _bandwidth(region)
