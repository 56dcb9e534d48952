"""Read a target: a built-in name (``stm32h743``) or a TOML file (``--target my_board.toml``).

Input: a name or a path. Output: a checked :class:`~mcudeploy.targets.model.Target`.
The file format, documented for users in ``docs/targets.md``::

    name = "my-board"                 # required
    description = "..."
    references = ["STM32H743 datasheet DS12110", "RM0433"]
    layout = "NHWC"                   # activation layout of the target's kernels
    input_spatial_multiple = 1        # model input H, W must be multiples of this
    regions_from = "board.mpool"      # optional: take [[regions]] from an ST memory-pool file

    [core]      name, clock_mhz, arch = armv6m|armv7m|armv7em|armv8m.base|armv8m.main|
                armv8.1m.main (default: the known architecture of the named core),
                fpu = none|single|double, dsp, mve = none|integer|float,
                icache_bytes, dcache_bytes, active_power_mw            (the last three: estimator)
    [npu]       name, clock_mhz, ops_per_cycle or tops, ops (IR op names), dtypes,
                channel_alignment, strict_channel_alignment, max_kernel, max_stride,
                max_dimension                                  (the whole table is optional);
                for the estimator: accelerators, macs_per_accelerator, stream_engines,
                stream_bytes_per_cycle, bus_interfaces, bus_bytes_per_cycle, epoch_controller,
                epoch_setup_cycles, epoch_setup_cycles_software, run_overhead_us,
                max_native_kernel, kernel_band_rows, pointwise_split_channels, active_power_mw
    [[regions]] name, base, size, kind = sram|psram|flash, access = rw|r,
                bandwidth_mb_per_s (1 MB = 1e6 bytes), latency_cycles,
                security = secure|non-secure|both, npu_access, dma_access, holds_data, note,
                cache_bytes, line_bytes, byte_width, freq_ratio        (the last four: estimator)

Every check names the file and the key: unknown or missing keys, wrong types, zero or
negative sizes and clocks, NaN / infinite numbers, integers beyond 2**64, region names
that are not C / linker identifiers, overlapping regions, NPU ops that are not IR ops
(:func:`mcudeploy.ir.all_ops`), dtypes that are not IR dtypes, extensions the core's
architecture does not have (DSP on Armv6-M / Armv7-M / Armv8-M Baseline, MVE before
Armv8.1-M).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import did_you_mean
from ..ir import DType, all_ops
from ..package_data import package_folder
from ..text_inputs import parse_toml, read_text
from .memory_pools import load_memory_pools
from .model import (
    ACCESS_MODES,
    ARCHITECTURES,
    CORE_ARCHITECTURES,
    DSP_ARCHITECTURES,
    FPU_KINDS,
    LAYOUTS,
    MEMORY_KINDS,
    MVE_ARCHITECTURES,
    MVE_KINDS,
    SECURITY_ATTRIBUTES,
    Core,
    MemoryRegion,
    Npu,
    Target,
    TargetError,
    check_regions,
    core_key,
)
from .schema import Field, check_identifier, check_table

TOP_FIELDS = [
    Field("name", "str", help="the target's name, e.g. \"my-board\""),
    Field("description", "str", ""),
    Field("references", "strs", ()),
    Field("layout", "str", "NHWC", LAYOUTS),
    Field("input_spatial_multiple", "int", 1, minimum=1),
    Field("regions_from", "str", ""),
    Field("notes", "strs", ()),
]
TABLES = ("core", "npu", "regions")
CORE_FIELDS = [
    Field("name", "str", help="e.g. \"Cortex-M7\""),
    Field("clock_mhz", "float", minimum=1, help="core clock in MHz"),
    Field("arch", "str", "", ARCHITECTURES, help="Arm M-profile architecture, e.g. \"armv7em\""),
    Field("fpu", "str", "none", FPU_KINDS),
    Field("dsp", "bool", False),
    Field("mve", "str", "none", MVE_KINDS),
    # latency estimator (mcudeploy.estimate); optional, 0 = none / unknown
    Field("icache_bytes", "size", 0, minimum=0, help="L1 instruction cache (Cortex-M7 / M55)"),
    Field("dcache_bytes", "size", 0, minimum=0, help="L1 data cache (Cortex-M7 / M55)"),
    Field("active_power_mw", "float", 0.0, minimum=0, help="core + memories running inference"),
]
NPU_FIELDS = [
    Field("name", "str"),
    Field("clock_mhz", "float", minimum=1, help="NPU clock in MHz"),
    Field("ops_per_cycle", "float", None, minimum=1e-9),
    Field("tops", "float", None, minimum=1e-9),
    Field("ops", "strs", help="IR op names the NPU runs, e.g. [\"Conv\", \"Add\"]"),
    Field("dtypes", "strs", ("int8",)),
    Field("channel_alignment", "int", 1, minimum=1),
    Field("strict_channel_alignment", "bool", False),
    Field("max_kernel", "int", 0, minimum=0),
    Field("max_stride", "int", 0, minimum=0),
    Field("max_dimension", "int", 0, minimum=0),
    # latency estimator (mcudeploy.estimate, docs/targets.md); optional, 0 = unknown
    Field("accelerators", "int", 0, minimum=0, help="convolution accelerators (Neural-ART: CA units)"),
    Field("macs_per_accelerator", "float", 0.0, minimum=0, help="int8 MACs per NPU cycle per accelerator"),
    Field("stream_engines", "int", 0, minimum=0),
    Field("stream_bytes_per_cycle", "float", 0.0, minimum=0, help="bytes one stream engine moves per cycle"),
    Field("bus_interfaces", "int", 0, minimum=0),
    Field("bus_bytes_per_cycle", "float", 0.0, minimum=0, help="bytes per NPU cycle per bus interface"),
    Field("epoch_controller", "bool", False),
    Field("epoch_setup_cycles", "float", 0.0, minimum=0, help="per hardware epoch, with the epoch controller"),
    Field("epoch_setup_cycles_software", "float", 0.0, minimum=0,
          help="per hardware epoch when the host core programs the units"),
    Field("run_overhead_us", "float", 0.0, minimum=0, help="per inference: runtime start, cache maintenance"),
    Field("max_native_kernel", "int", 0, minimum=0, help="largest kernel run in one pass (0: no limit)"),
    Field("kernel_band_rows", "int", 0, minimum=0, help="kernel rows per pass of a larger kernel"),
    Field("pointwise_split_channels", "int", 0, minimum=0,
          help="a 1x1 conv with fewer input channels runs as two epochs (0: never)"),
    Field("active_power_mw", "float", 0.0, minimum=0),
]
REGION_FIELDS = [
    Field("name", "str"),
    Field("base", "int", minimum=0, help="start address, e.g. 0x2000_0000"),
    Field("size", "size", minimum=1, help="bytes, or text like \"128K\""),
    Field("kind", "str", "sram", MEMORY_KINDS),
    Field("access", "str", "rw", ACCESS_MODES),
    Field("bandwidth_mb_per_s", "float", 0.0, minimum=0),
    Field("latency_cycles", "int", 0, minimum=0),
    Field("security", "str", "both", SECURITY_ATTRIBUTES),
    Field("npu_access", "bool", True),
    Field("dma_access", "bool", True, help="the DMA engines that fill inputs reach it"),
    Field("holds_data", "bool", True, help="false for a bank kept for code (ITCM)"),
    Field("cache_bytes", "size", 0, minimum=0, help="CPU-side cache in front of it (flash ART / ICACHE)"),
    Field("line_bytes", "int", 0, minimum=0, help="bytes per access burst / cache line fill"),
    Field("byte_width", "float", 0.0, minimum=0, help="ST .mpool byteWidth: bytes per memory cycle"),
    Field("freq_ratio", "float", 0.0, minimum=0, help="ST .mpool freqRatio: NPU clock / memory clock"),
    Field("note", "str", ""),
]


# Keys only the latency estimator reads, passed through by name (the records' trailing fields).
ESTIMATOR_KEYS = {
    "core": ("icache_bytes", "dcache_bytes", "active_power_mw"),
    "npu": ("accelerators", "macs_per_accelerator", "stream_engines", "stream_bytes_per_cycle",
            "bus_interfaces", "bus_bytes_per_cycle", "epoch_controller", "epoch_setup_cycles",
            "epoch_setup_cycles_software", "run_overhead_us", "max_native_kernel", "kernel_band_rows",
            "pointwise_split_channels", "active_power_mw"),
    "regions": ("cache_bytes", "line_bytes", "byte_width", "freq_ratio"),
}


def builtin_names() -> list[str]:
    """Names of the built-in targets (files in ``targets/builtin``), sorted."""
    folder = package_folder(__package__) / "builtin"
    return sorted(Path(item.name).stem for item in folder.iterdir() if item.name.endswith(".toml"))


def load_target(spec: str | Path) -> Target:
    """A built-in target by name (case-insensitive) or a target file by path."""
    text = str(spec)
    path = Path(text)
    if path.suffix.lower() == ".toml" or path.is_file():
        if not path.is_file():
            raise TargetError(f"{path}: no such target file; give a built-in name "
                              f"({', '.join(builtin_names())}) or an existing .toml file")
        if path.suffix.lower() != ".toml":
            raise TargetError(f"{path}: a target file must be TOML (.toml); memory-pool files "
                              "(.mpool / .json) describe regions only: reference them from a "
                              "target with regions_from = \"...\"")
        return load_target_file(path)
    name = text.lower()
    if name not in builtin_names():
        raise TargetError(f"unknown target {text!r}{did_you_mean(name, builtin_names())} (built-in "
                          f"targets: {', '.join(builtin_names())}, or give a path to a .toml file)")
    resource = package_folder(__package__) / "builtin" / f"{name}.toml"
    return parse_target(resource.read_text(encoding="utf-8"), f"builtin/{name}.toml", Path("."))


def load_target_file(path: Path) -> Target:
    text = read_text(path, "target file", error=TargetError)
    return parse_target(text, str(path), path.parent)


def parse_target(text: str, source: str, folder: Path) -> Target:
    """A target from TOML ``text``; ``source`` names it in messages, ``folder`` resolves
    ``regions_from``."""
    document = parse_toml(text, source, error=TargetError)
    top = check_table({k: v for k, v in document.items() if k not in TABLES}, TOP_FIELDS,
                      "top level", source, also_known=TABLES)
    if "core" not in document:
        raise TargetError(f"{source}: missing table [core] (name, clock_mhz, fpu, dsp, mve)")
    core = _core(document["core"], source)
    npu = _npu(document["npu"], source) if "npu" in document else None
    regions = _regions(document, top["regions_from"], source, folder)
    return Target(name=top["name"], core=core, regions=regions, npu=npu,
                  description=top["description"], references=top["references"],
                  layout=top["layout"], input_spatial_multiple=top["input_spatial_multiple"],
                  source=source, notes=top["notes"])


def _core(table: Any, source: str) -> Core:
    values = check_table(table, CORE_FIELDS, "[core]", source)
    arch = values["arch"] or CORE_ARCHITECTURES.get(core_key(values["name"]), "")
    _check_extensions(arch, values, source)
    return Core(values["name"], values["clock_mhz"] * 1e6, values["fpu"], values["dsp"],
                values["mve"], **{key: values[key] for key in ESTIMATOR_KEYS["core"]}, arch=arch)


def _check_extensions(arch: str, values: dict[str, Any], source: str) -> None:
    """The DSP extension and MVE only where the architecture has them (an unknown one: any)."""
    where = f"{source}: [core] {values['name']!r} ({arch})"
    if arch and values["dsp"] and arch not in DSP_ARCHITECTURES:
        raise TargetError(f"{where}: dsp = true, but {arch} has no DSP extension (it needs "
                          f"{', '.join(DSP_ARCHITECTURES)}); set dsp = false or correct 'arch'")
    if arch and values["mve"] != "none" and arch not in MVE_ARCHITECTURES:
        raise TargetError(f"{where}: mve = {values['mve']!r}, but the M-profile Vector Extension needs "
                          f"{', '.join(MVE_ARCHITECTURES)}; set mve = \"none\" or correct 'arch'")


def _npu(table: Any, source: str) -> Npu:
    values = check_table(table, NPU_FIELDS, "[npu]", source)
    clock_hz = values["clock_mhz"] * 1e6
    if (values["ops_per_cycle"] is None) == (values["tops"] is None):
        raise TargetError(f"{source}: [npu]: give exactly one of 'ops_per_cycle' or 'tops' "
                          "(peak operations; 1 MACC = 2 operations)")
    ops_per_cycle = values["ops_per_cycle"] or values["tops"] * 1e12 / clock_hz
    known_ops = all_ops()
    unknown = [op for op in values["ops"] if op not in known_ops]
    if unknown:
        raise TargetError(f"{source}: [npu] key 'ops': {', '.join(map(repr, unknown))} "
                          f"{'is' if len(unknown) == 1 else 'are'} not IR op(s); known ops: "
                          f"{', '.join(sorted(known_ops))}")
    dtype_names = {d.value for d in DType}
    bad_dtypes = [d for d in values["dtypes"] if d not in dtype_names]
    if bad_dtypes:
        raise TargetError(f"{source}: [npu] key 'dtypes': {', '.join(map(repr, bad_dtypes))} "
                          f"not IR dtype(s); use {', '.join(sorted(dtype_names))}")
    return Npu(values["name"], clock_hz, ops_per_cycle, frozenset(values["ops"]),
               frozenset(values["dtypes"]), values["channel_alignment"],
               values["strict_channel_alignment"], values["max_kernel"], values["max_stride"],
               values["max_dimension"], **{key: values[key] for key in ESTIMATOR_KEYS["npu"]})


def _regions(document: dict[str, Any], regions_from: str, source: str,
             folder: Path) -> tuple[MemoryRegion, ...]:
    if regions_from and "regions" in document:
        raise TargetError(f"{source}: give either [[regions]] or regions_from, not both")
    if regions_from:
        path = Path(regions_from)
        regions = load_memory_pools(path if path.is_absolute() else folder / path)
    else:
        tables = document.get("regions")
        if tables is not None and not (isinstance(tables, list) and tables):
            raise TargetError(f"{source}: key 'regions' must be one or more [[regions]] tables "
                              f"(name, base, size, ...), got {tables!r}")
        if tables is None:
            raise TargetError(f"{source}: missing key 'regions': describe the memory as "
                              "[[regions]] tables (name, base, size, kind, ...) or set "
                              "regions_from = \"board.mpool\"")
        regions = tuple(_region(table, index, source) for index, table in enumerate(tables))
    check_regions(regions, source)
    return regions


def _region(table: Any, index: int, source: str) -> MemoryRegion:
    label = table.get("name") if isinstance(table, dict) else None
    where = f"[[regions]] #{index + 1}" + (f" ({label!r})" if isinstance(label, str) else "")
    values = check_table(table, REGION_FIELDS, where, source)
    check_identifier(values["name"], "name", where, source)
    return MemoryRegion(values["name"], values["base"], values["size"], values["kind"],
                        values["access"], values["bandwidth_mb_per_s"] * 1e6,
                        values["latency_cycles"], values["security"], values["npu_access"],
                        values["note"], values["dma_access"], values["holds_data"],
                        **{key: values[key] for key in ESTIMATOR_KEYS["regions"]})
