"""Wait cycles of a CPU's loads and stores to a memory region (flash wait states, caches,
external RAM), from the target's region figures.

Input: an :class:`~.traffic.Access`, its :class:`~mcudeploy.targets.MemoryRegion`, the core
(its L1 data cache) and the clocks. Output: wait cycles (``None`` when the region lacks the
figures; the caller marks the layer unknown and names the keys).

    zero-wait region (on-chip SRAM / TCM, latency_cycles <= 1):   0
    fills   = unique / line    when a cache in front of the region holds the working sets of
                               every stream of the layer that goes through that cache
            = bytes / line     otherwise: the streams evict each other (the accesses are
                               sequential: one line fill serves line / access bytes of them)
    per_fill = max(latency x f / f_target,  line / bandwidth x f)
    wait    = fills x per_fill                                   (no prefetch)
            = fills x max(0, per_fill - compute / fills_region)  (prefetching internal flash)

Internal flash (a ``flash`` region below the external-memory space 0x6000_0000) prefetches:
every STM32 flash interface fetches the next line while the core works on the current one
(ART accelerator / prefetch buffer), so a sequential stream waits only for what the core's
own work between two line fills (its compute cycles over the region's fills) does not hide.
External memories (octo/quad-SPI flash, PSRAM) are charged every fill.

``line`` is the region's ``line_bytes`` (default: 8 for flash, 32 for external RAM, 4 else);
the cache is the region's own (``cache_bytes``: the flash ART accelerator, an ICACHE on the
code bus) or the core's L1 data cache (``dcache_bytes``, Cortex-M7 / M55), whichever is larger.
``latency_cycles`` is given at the target's clock; the memory's latency is a time, so at
another core clock it scales with the clock (a slower core waits fewer cycles).
"""
from __future__ import annotations

from ..targets import MemoryRegion
from .traffic import Access

DEFAULT_LINE = {"flash": 8, "psram": 32, "sram": 4}
EXTERNAL_MEMORY_START = 0x6000_0000


def prefetches(region: MemoryRegion) -> bool:
    """Internal flash: its interface prefetches sequential lines (module docstring)."""
    return region.kind == "flash" and region.base < EXTERNAL_MEMORY_START


def is_zero_wait(region: MemoryRegion) -> bool:
    return region.zero_wait


def line_bytes(region: MemoryRegion) -> int:
    return region.line_bytes or DEFAULT_LINE.get(region.kind, 4)


def missing_figures(region: MemoryRegion) -> list[str]:
    """Keys a slow region needs and lacks."""
    if is_zero_wait(region):
        return []
    return [] if region.bandwidth > 0 or region.latency_cycles > 0 else ["bandwidth_mb_per_s", "latency_cycles"]


def cache_of(region: MemoryRegion, dcache_bytes: int) -> tuple[str, int]:
    """(which cache, its bytes) in front of ``region``: its own, or the core's L1 data cache
    (:meth:`~mcudeploy.targets.MemoryRegion.cache_in_front`, which the placement reads too)."""
    return region.cache_in_front(dcache_bytes)


def fills_of(access: Access, region: MemoryRegion, dcache_bytes: int, pressure: dict[str, int] | None = None) -> float:
    """Line fills ``access`` makes from ``region`` (module docstring). ``pressure``: cache ->
    summed working sets of the layer's streams through it (default: this stream alone)."""
    if is_zero_wait(region) or access.bytes <= 0:
        return 0.0
    key, cache = cache_of(region, dcache_bytes)
    load = (pressure or {}).get(key, access.working_set)
    moved = access.unique if cache and max(load, access.working_set) <= cache else access.bytes
    return moved / line_bytes(region)


def wait_cycles(access: Access, region: MemoryRegion, dcache_bytes: int, clock_hz: float,
                target_clock_hz: float, hidden_per_fill: float = 0.0,
                pressure: dict[str, int] | None = None) -> float | None:
    """Wait cycles of ``access`` (module docstring); None when the region lacks figures.
    ``hidden_per_fill``: the core's cycles between two fills of a prefetching region."""
    if is_zero_wait(region) or access.bytes <= 0:
        return 0.0
    if missing_figures(region):
        return None
    latency = region.latency_cycles * clock_hz / target_clock_hz
    transfer = line_bytes(region) / region.bandwidth * clock_hz if region.bandwidth > 0 else 0.0
    per_fill = max(latency, transfer)
    if prefetches(region):
        per_fill = max(0.0, per_fill - hidden_per_fill)
    return fills_of(access, region, dcache_bytes, pressure) * per_fill
