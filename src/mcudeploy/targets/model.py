"""Hardware targets as plain records: a :class:`Target` has one CPU :class:`Core`, an optional
:class:`Npu` and a list of :class:`MemoryRegion` s.

Input: the fields a loader read from a data file (``targets/builtin/*.toml``, a user's TOML
file, an ST ``.mpool`` memory-pool file). Output: frozen records that later stages
(mapping, planning, estimation, lint) read; nothing here knows about models.

Units are the SI ones the estimators use: clocks in Hz, sizes in bytes, bandwidth in
bytes per second, latency in cycles of the core clock. The NPU's peak throughput is
``ops_per_cycle x clock_hz`` operations per second, with one MACC = 2 operations
(``tops = 2 x MACC/s / 1e12``).

:func:`check_regions` holds the checks that need more than one field (overlap); the
per-field checks live in the loader, which knows the file and key to name.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import UsageError

MEMORY_KINDS = ("sram", "psram", "flash")
"""``sram``: on-chip RAM; ``psram``: external RAM (PSRAM, HyperRAM, SDRAM);
``flash``: read-only storage (internal or external NOR flash)."""
ACCESS_MODES = ("rw", "r")
SECURITY_ATTRIBUTES = ("secure", "non-secure", "both")
"""TrustZone view of the region's address: ``secure`` (secure alias), ``non-secure``
(non-secure alias) or ``both`` (no TrustZone on this core, or not partitioned)."""
FPU_KINDS = ("none", "single", "double")
MVE_KINDS = ("none", "integer", "float")
"""Arm M-profile Vector Extension (Helium): absent, integer-only, or integer + float."""
LAYOUTS = ("NHWC", "NCHW")
ARCHITECTURES = ("armv6m", "armv7m", "armv7em", "armv8m.base", "armv8m.main", "armv8.1m.main")
"""Arm M-profile architectures (GCC's ``-march`` spelling without ``-``): Armv6-M (Cortex-M0 /
M0+ / M1), Armv7-M (M3), Armv7E-M (M4, M7: with the DSP extension), Armv8-M Baseline (M23),
Armv8-M Mainline (M33, M35P), Armv8.1-M Mainline (M52, M55, M85: the only one with MVE)."""
ARMV8M_ARCHITECTURES = ("armv8m.base", "armv8m.main", "armv8.1m.main")
DSP_ARCHITECTURES = ("armv7em", "armv8m.main", "armv8.1m.main")   # where the DSP extension can exist
MVE_ARCHITECTURES = ("armv8.1m.main",)
CORE_ARCHITECTURES = {
    "cortex-m0": "armv6m", "cortex-m0+": "armv6m", "cortex-m1": "armv6m", "cortex-m3": "armv7m",
    "cortex-m4": "armv7em", "cortex-m7": "armv7em", "cortex-m23": "armv8m.base", "cortex-m33": "armv8m.main",
    "cortex-m35p": "armv8m.main", "cortex-m52": "armv8.1m.main", "cortex-m55": "armv8.1m.main",
    "cortex-m85": "armv8.1m.main",
}
"""The architecture of each Arm core by its :func:`core_key`: what a target file that names a
known core without ``arch`` gets (Arm's Technical Reference Manuals). Data, not a pattern."""


def core_key(name: str) -> str:
    """A core name as the tables key it: lower case, without a ``-class`` suffix or the ``F``
    (FPU) of ``Cortex-M4F``: ``"Cortex-M55-class"`` -> ``"cortex-m55"``."""
    text = name.strip().lower().removesuffix("class").rstrip("-_ ")
    return text[:-1] if text.endswith("f") and text[-2:-1].isdigit() else text


class TargetError(UsageError):
    """A target description (TOML, ``.mpool`` or memory-pool JSON) is wrong: the message
    names the file, the key and what to change. Exit code 2 like other usage errors."""


@dataclass(frozen=True)
class Core:
    """The CPU core of a target: its architecture (:data:`ARCHITECTURES`, "" when not an Arm
    M-profile core mcudeploy knows) and its extensions (FPU, DSP, MVE), declared per core: code
    that depends on the instruction set reads these fields, never the name."""
    name: str
    clock_hz: float
    fpu: str = "none"
    dsp: bool = False
    mve: str = "none"
    icache_bytes: int = 0        # L1 caches (Cortex-M7 / M55); 0 = none
    dcache_bytes: int = 0
    active_power_mw: float = 0.0  # 0 = unknown (no energy estimate)
    arch: str = ""

    @property
    def has_float(self) -> bool:
        return self.fpu != "none"

    @property
    def armv8m(self) -> bool:
        """An Armv8-M core (Baseline, Mainline or Armv8.1-M): runs on the Armv8.1-M QEMU board."""
        return self.arch in ARMV8M_ARCHITECTURES


@dataclass(frozen=True)
class Npu:
    """An NPU and what it accepts. A node runs on it only when every mapping predicate
    (:mod:`mcudeploy.mapping.predicates`) passes; these fields are what they compare."""
    name: str
    clock_hz: float
    ops_per_cycle: float
    ops: frozenset[str]
    dtypes: frozenset[str] = frozenset({"int8"})
    channel_alignment: int = 1
    strict_channel_alignment: bool = False
    max_kernel: int = 0          # 0: no limit
    max_stride: int = 0          # 0: no limit
    max_dimension: int = 0       # 0: no limit
    # performance figures read by mcudeploy.estimate (0 = unknown); see docs/targets.md
    accelerators: int = 0                  # convolution accelerators
    macs_per_accelerator: float = 0.0      # int8 MACs per NPU cycle each
    stream_engines: int = 0
    stream_bytes_per_cycle: float = 0.0    # bytes one stream engine moves per NPU cycle
    bus_interfaces: int = 0
    bus_bytes_per_cycle: float = 0.0       # per bus interface, per NPU cycle
    epoch_controller: bool = False
    epoch_setup_cycles: float = 0.0        # per hardware epoch with the epoch controller
    epoch_setup_cycles_software: float = 0.0   # per epoch when the host core programs it
    run_overhead_us: float = 0.0           # per inference
    max_native_kernel: int = 0             # larger kernels are split into passes (0: no limit)
    kernel_band_rows: int = 0              # kernel rows per pass of a split kernel
    pointwise_split_channels: int = 0      # 1x1 conv on fewer input channels: two epochs
    active_power_mw: float = 0.0

    @property
    def tops(self) -> float:
        """Peak tera-operations per second (1 MACC = 2 operations)."""
        return self.ops_per_cycle * self.clock_hz / 1e12


@dataclass(frozen=True)
class MemoryRegion:
    """One memory region of a target: name, base address, size, kind."""
    name: str
    base: int
    size: int
    kind: str = "sram"
    access: str = "rw"
    bandwidth: float = 0.0       # bytes / s; 0 = unknown
    latency_cycles: int = 0
    security: str = "both"
    npu_access: bool = True
    note: str = ""
    dma_access: bool = True      # reachable by the DMA engines that move inputs / outputs
    holds_data: bool = True      # False: kept for code (an ITCM), never given activations
    cache_bytes: int = 0         # CPU-side cache in front of the region (flash ART, ICACHE)
    line_bytes: int = 0          # bytes per burst / line fill; 0 = unknown
    byte_width: float = 0.0      # ST .mpool: bytes per memory cycle (0 = not given)
    freq_ratio: float = 0.0      # ST .mpool: NPU clock / memory clock

    @property
    def speed(self) -> float:
        """Bytes per second, with unknown bandwidth (0) counted as 100 MB/s."""
        return self.bandwidth or 100e6

    @property
    def end(self) -> int:
        """First address after the region."""
        return self.base + self.size

    @property
    def writable(self) -> bool:
        return self.access == "rw"

    @property
    def on_chip(self) -> bool:
        return self.kind == "sram"

    @property
    def zero_wait(self) -> bool:
        """On-chip RAM at the core's speed (one cycle or less): nothing to cache."""
        return self.on_chip and self.latency_cycles <= 1

    def cache_in_front(self, dcache_bytes: int) -> tuple[str, int]:
        """(which cache, its bytes) a core with an L1 data cache of ``dcache_bytes`` reads this
        region through: its own (a flash ART accelerator, an ICACHE) or the core's, the larger;
        ("", 0) for zero-wait RAM. A stream whose re-read bytes fit it misses only once."""
        if self.zero_wait:
            return "", 0
        core = dcache_bytes if self.kind != "sram" or self.latency_cycles > 1 else 0
        return ("region:" + self.name, self.cache_bytes) if self.cache_bytes >= core else ("core", core)


@dataclass(frozen=True)
class Target:
    """A device: core, optional NPU, memory regions and placement rules."""
    name: str
    core: Core
    regions: tuple[MemoryRegion, ...]
    npu: Npu | None = None
    description: str = ""
    references: tuple[str, ...] = ()
    layout: str = "NHWC"                 # activation layout of the target's kernels
    input_spatial_multiple: int = 1      # input H and W must be multiples of this (1 = any)
    source: str = "<memory>"             # file it was read from, for messages
    notes: tuple[str, ...] = field(default=())

    @property
    def has_npu(self) -> bool:
        return self.npu is not None

    def region(self, name: str) -> MemoryRegion:
        for region in self.regions:
            if region.name == name:
                return region
        raise TargetError(f"{self.source}: target {self.name!r} has no memory region {name!r}; "
                          f"it has {', '.join(r.name for r in self.regions)}")

    def regions_of_kind(self, kind: str) -> list[MemoryRegion]:
        return [r for r in self.regions if r.kind == kind]

    @property
    def largest_sram(self) -> MemoryRegion | None:
        """The largest on-chip writable region (a single tensor cannot span two regions)."""
        candidates = [r for r in self.regions if r.on_chip and r.writable]
        return max(candidates, key=lambda r: r.size, default=None)

    @property
    def total_sram(self) -> int:
        return sum(r.size for r in self.regions if r.on_chip and r.writable)

    def with_regions(self, regions: tuple[MemoryRegion, ...] | list[MemoryRegion],
                     source: str) -> "Target":
        """This target with its memory replaced (e.g. by an ST ``.mpool`` file), checked."""
        regions = tuple(regions)
        check_regions(regions, source)
        return replace(self, regions=regions)


def check_regions(regions: tuple[MemoryRegion, ...], source: str) -> None:
    """Refuse duplicate names and overlapping address ranges, naming both regions."""
    seen: set[str] = set()
    for region in regions:
        if region.name in seen:
            raise TargetError(f"{source}: memory region name {region.name!r} is used twice; "
                              "give each region a unique name")
        seen.add(region.name)
    ordered = sorted(regions, key=lambda r: r.base)
    for first, second in zip(ordered, ordered[1:]):
        if second.base < first.end:
            overlap = first.end - second.base
            raise TargetError(
                f"{source}: memory regions {first.name!r} [{first.base:#010x}, {first.end:#010x}) "
                f"and {second.name!r} [{second.base:#010x}, {second.end:#010x}) overlap by "
                f"{overlap} bytes; fix their base or size")
