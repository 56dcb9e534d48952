"""Deployment options: one typed record of every choice that shapes a deployment.

Input: defaults, a TOML file (``--config FILE``) and command-line values, in that order of
precedence (the command line wins). Output: a frozen :class:`DeploymentOptions`, printed
back in every report and JSON (:meth:`DeploymentOptions.to_toml`, :meth:`to_dict`) so that
a configuration found once can be pinned and reproduced.

The file format (every key optional; sections group the keys as users think of them)::

    [target]
    name = "stm32h743"              # built-in name or a target .toml file
    memory_pools = "board.mpool"    # replaces the target's regions (ST .mpool / JSON)

    [memory]
    sram_limit = "384K"             # cap on every on-chip region
    reserve = "200K"                # on-chip bytes kept for the application
    reserve_regions = ["DTCM"]      # regions the application keeps entirely
    stack = "4K"
    alignment = 16                  # power of two
    io_in_arena = true              # graph inputs / outputs live in the arena
    activation_region = "AXI_SRAM"  # pin the arena to one region (default: by speed)
    external_activations = true     # PSRAM allowed when no on-chip region holds the arena
    split_arena = true              # spread the arena over several banks when no single one holds it

    [schedule]
    order = "memory-aware"          # or "file"
    reuse = true                    # in-place / overlap / concat reuse
    overlap = true
    concat_in_place = true
    time_limit = 10.0               # seconds the schedule + allocator may search

    [weights]
    placement = "auto"              # auto | flash | ram
    ram_limit = "64K"               # on-chip bytes the copied weights may take (hottest first;
                                    #   default: all the room left after the arena)

    [mapping]
    force_cpu = ["conv7"]
    executor = "mcudeploy"          # who runs the nodes: mcudeploy (its CPU code) | vendor-npu

    [kernels]
    variant = "auto"                # auto: the fastest variant the core runs while the deployment
                                    #   fits, else the fewest fall back that make it fit
                                    # arena: a fast variant only where it costs no arena over the
                                    #   reference kernels (plan/variant_arena.py)
                                    # fastest: the fastest variant everywhere, fit or not
                                    # reference: the portable kernels everywhere

    [tiling]                        # run regions of layers tile by tile (plan/tiling.py)
    regions = [{start = "conv1", end = "conv5", tiles = 4}]   # 4 row stripes; [2, 2]: patches
    auto = true                     # choose the regions and tile counts (needs limit or a target)
    limit = "256K"                  # auto: the arena to reach (default: the target's on-chip room)
    max_overhead = 0.15             # auto: the most extra MACC (recomputed halos) accepted
    mode = "rows"                   # auto: rows | patches
    channel_splits = {conv7 = 4}    # a Conv computed in 4 groups of output channels
    input_channel_splits = {conv9 = 4}   # an int8 Conv summed over 4 groups of input channels (int32)

    [split]                         # graph split: tensors that cross a cut live off chip
    points = ["conv7"]              # cut after these nodes
    auto = true                     # spill long-lived tensors off chip until the arena fits limit
    levels = true                   # or: cut at every resolution level, spill what crosses,
                                    # tile each level until it fits (limit: the peak to reach)
    limit = "1M"
    region = "hyperRAM"             # external region (default: the target's largest external RAM)

Sizes are bytes or text with a binary unit (``"384K"``, ``"1 MiB"``). Every problem in a
file is one :class:`~mcudeploy.errors.UsageError` naming the file, the key and the accepted
values (exit 2); nothing is read further.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

from .errors import UsageError
from .text_inputs import read_toml
from .units import parse_size

SCHEDULES = ("memory-aware", "file")
WEIGHT_PLACEMENTS = ("auto", "flash", "ram")
KERNEL_PREFERENCES = ("auto", "arena", "fastest", "reference")
# Who runs the deployed nodes (mapping/executor.py): "mcudeploy" = the C code mcudeploy writes
# (CPU kernels for every node: it writes no NPU code); "vendor-npu" = the vendor's NPU compiler
# (ST Edge AI on the STM32N6) runs the nodes the NPU takes, from the hand-off generate writes.
EXECUTORS = ("mcudeploy", "vendor-npu")
TILING_MODES = ("rows", "patches")


@dataclass(frozen=True)
class TilingRegion:
    """One region to tile (``[tiling] regions``): the nodes on the paths from ``start`` to
    ``end``, run as ``rows`` x ``columns`` tiles of ``end``'s output (columns = 1: row stripes)."""
    start: str
    end: str
    rows: int = 2
    columns: int = 1

    @property
    def mode(self) -> str:
        return "rows" if self.columns == 1 else "patches"

    def to_table(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end,
                "tiles": self.rows if self.columns == 1 else [self.rows, self.columns]}


@dataclass(frozen=True)
class DeploymentOptions:
    """Every deployment choice (module docstring); defaults are mcudeploy's own."""
    target: str | None = None
    memory_pools: str | None = None
    sram_limit: int | None = None
    reserve: int = 0
    reserve_regions: tuple[str, ...] = ()
    stack: int = 4096
    alignment: int = 16
    io_in_arena: bool = True
    activation_region: str | None = None
    external_activations: bool = True
    split_arena: bool = False
    schedule: str = "memory-aware"
    reuse: bool = True
    overlap: bool = True
    concat_in_place: bool = True
    time_limit: float = 10.0
    weights: str = "auto"
    weights_ram_limit: int | None = None
    force_cpu: tuple[str, ...] = ()
    executor: str = "mcudeploy"
    kernels: str = "auto"
    tiling_regions: tuple[TilingRegion, ...] = ()
    tiling_auto: bool = False
    tiling_limit: int | None = None
    tiling_max_overhead: float = 0.15
    tiling_mode: str = "rows"
    channel_splits: tuple[tuple[str, int], ...] = ()
    input_channel_splits: tuple[tuple[str, int], ...] = ()
    split_points: tuple[str, ...] = ()
    split_auto: bool = False
    split_levels: bool = False
    split_limit: int | None = None
    external_region: str | None = None

    def with_values(self, **values: Any) -> "DeploymentOptions":
        """A copy with ``values`` replaced, each checked like a file value."""
        checked = {name: _check(OPTION_SPECS[name], value, f"option {name}") for name, value in values.items()}
        return replace(self, **checked)

    def to_dict(self) -> dict[str, Any]:
        values = {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}
        values["tiling_regions"] = [region.to_table() for region in self.tiling_regions]
        values["channel_splits"] = dict(self.channel_splits)
        values["input_channel_splits"] = dict(self.input_channel_splits)
        return values

    def to_toml(self) -> str:
        """The options as a ``--config`` file (only the keys that differ from the defaults
        are written; ``full=True`` of :func:`options_toml` writes all)."""
        return options_toml(self)


@dataclass(frozen=True)
class OptionSpec:
    """One option: its field, its TOML section and key, its kind and accepted values."""
    field: str
    section: str
    key: str
    kind: str                       # size | int | float | bool | str | strs
    choices: tuple[str, ...] = ()
    optional: bool = False          # None allowed (not written to TOML)
    help: str = ""


OPTION_SPECS: dict[str, OptionSpec] = {spec.field: spec for spec in (
    OptionSpec("target", "target", "name", "str", optional=True, help="built-in target name or a .toml file"),
    OptionSpec("memory_pools", "target", "memory_pools", "str", optional=True, help="ST .mpool / memory-pool JSON"),
    OptionSpec("sram_limit", "memory", "sram_limit", "size", optional=True, help="cap on every on-chip region"),
    OptionSpec("reserve", "memory", "reserve", "size", help="on-chip bytes kept for the application"),
    OptionSpec("reserve_regions", "memory", "reserve_regions", "strs", help="regions the application keeps"),
    OptionSpec("stack", "memory", "stack", "size"),
    OptionSpec("alignment", "memory", "alignment", "int", help="tensor alignment, a power of two"),
    OptionSpec("io_in_arena", "memory", "io_in_arena", "bool"),
    OptionSpec("activation_region", "memory", "activation_region", "str", optional=True),
    OptionSpec("external_activations", "memory", "external_activations", "bool",
               help="the arena may go to external RAM (PSRAM) when no on-chip region holds it"),
    OptionSpec("split_arena", "memory", "split_arena", "bool",
               help="spread the arena over several banks (tensors assigned to banks) when no single bank holds it"),
    OptionSpec("schedule", "schedule", "order", "str", SCHEDULES),
    OptionSpec("reuse", "schedule", "reuse", "bool"),
    OptionSpec("overlap", "schedule", "overlap", "bool"),
    OptionSpec("concat_in_place", "schedule", "concat_in_place", "bool"),
    OptionSpec("time_limit", "schedule", "time_limit", "float"),
    OptionSpec("weights", "weights", "placement", "str", WEIGHT_PLACEMENTS),
    OptionSpec("weights_ram_limit", "weights", "ram_limit", "size", optional=True,
               help="on-chip bytes the weights copied out of flash may take, the most-read first"),
    OptionSpec("force_cpu", "mapping", "force_cpu", "strs"),
    OptionSpec("executor", "mapping", "executor", "str", EXECUTORS,
               help="who runs the nodes: mcudeploy (its CPU code) or vendor-npu (the vendor's NPU compiler)"),
    OptionSpec("kernels", "kernels", "variant", "str", KERNEL_PREFERENCES),
    OptionSpec("tiling_regions", "tiling", "regions", "regions",
               help="regions run tile by tile: {start, end, tiles = N | [rows, columns]}"),
    OptionSpec("tiling_auto", "tiling", "auto", "bool", help="choose regions and tile counts to reach limit"),
    OptionSpec("tiling_limit", "tiling", "limit", "size", optional=True, help="arena to reach with auto"),
    OptionSpec("tiling_max_overhead", "tiling", "max_overhead", "float", help="most extra MACC with auto"),
    OptionSpec("tiling_mode", "tiling", "mode", "str", TILING_MODES),
    OptionSpec("channel_splits", "tiling", "channel_splits", "counts",
               help="Convs computed in groups of output channels: {node = groups}"),
    OptionSpec("input_channel_splits", "tiling", "input_channel_splits", "counts",
               help="int8 Convs summed over groups of input channels in an int32 accumulator: {node = groups}"),
    OptionSpec("split_points", "split", "points", "strs", help="cut after these nodes; crossing tensors off chip"),
    OptionSpec("split_auto", "split", "auto", "bool", help="spill long-lived tensors off chip until limit"),
    OptionSpec("split_levels", "split", "levels", "bool",
               help="cut at every resolution level, spill what crosses, tile each level until it fits on chip"),
    OptionSpec("split_limit", "split", "limit", "size", optional=True),
    OptionSpec("external_region", "split", "region", "str", optional=True,
               help="external region of the spilled tensors (default: the largest external RAM)"),
)}
SECTIONS: dict[str, dict[str, OptionSpec]] = {}
for _spec in OPTION_SPECS.values():
    SECTIONS.setdefault(_spec.section, {})[_spec.key] = _spec


def _size(value: Any) -> int:
    size = parse_size(value)
    if size < 0:
        raise ValueError(f"a size must not be negative, got {value!r}")
    return size


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected non-empty text, got {value!r}")
    return value


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ValueError(f"expected a list of names, got {value!r}")


def _tile_counts(value: Any) -> tuple[int, int]:
    counts = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(counts, (list, tuple)) or len(counts) not in (1, 2) or any(
            isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in counts):
        raise ValueError(f"tiles must be a positive count (row stripes) or [rows, columns], got {value!r}")
    rows, columns = (counts[0], 1) if len(counts) == 1 else counts
    if rows * columns < 2:
        raise ValueError(f"tiles {value!r} is one tile: give at least 2")
    return rows, columns


def _regions(value: Any) -> tuple[TilingRegion, ...]:
    if isinstance(value, dict) or not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of tables {{start, end, tiles}}, got {value!r}")
    regions = []
    for table in value:
        if isinstance(table, TilingRegion):
            regions.append(table)
            continue
        if not isinstance(table, dict) or set(table) - {"start", "end", "tiles", "mode"} or \
                not {"start", "end"} <= set(table):
            raise ValueError(f"each region is a table with start, end, tiles (and mode), got {table!r}")
        mode = table.get("mode", "rows")
        if mode not in TILING_MODES:
            raise ValueError(f"region mode {mode!r} is not one of {', '.join(TILING_MODES)}")
        tiles = table.get("tiles", 2)
        if mode == "patches" and isinstance(tiles, int) and not isinstance(tiles, bool):
            tiles = [tiles, tiles]
        rows, columns = _tile_counts(tiles)
        regions.append(TilingRegion(_text(table["start"]), _text(table["end"]), rows, columns))
    return tuple(regions)


def _counts(value: Any) -> tuple[tuple[str, int], ...]:
    items = value.items() if isinstance(value, dict) else value
    try:
        pairs = tuple((_text(name), _integer(count)) for name, count in items)
    except (TypeError, ValueError):
        raise ValueError(f"expected a table of node = count, got {value!r}") from None
    if any(count < 2 for _, count in pairs):
        raise ValueError(f"every count must be at least 2, got {value!r}")
    return pairs


KINDS: dict[str, Callable[[Any], Any]] = {"size": _size, "int": _integer, "float": _number,
                                          "bool": _boolean, "str": _text, "strs": _texts,
                                          "regions": _regions, "counts": _counts}


def _check(spec: OptionSpec, value: Any, where: str) -> Any:
    if value is None:
        if spec.optional:
            return None
        raise UsageError(f"{where}: a value is required")
    try:
        checked = KINDS[spec.kind](value)
    except ValueError as err:
        raise UsageError(f"{where}: {err}") from None
    if spec.choices and checked not in spec.choices:
        raise UsageError(f"{where}: {checked!r} is not one of {', '.join(spec.choices)}")
    if spec.field == "alignment" and (checked < 1 or checked & (checked - 1)):
        raise UsageError(f"{where}: must be a power of two (1, 4, 16, 32, ...), got {checked}")
    if spec.field == "time_limit" and checked <= 0:
        raise UsageError(f"{where}: must be positive, got {checked:g}")
    if spec.field == "tiling_max_overhead" and checked < 0:
        raise UsageError(f"{where}: must not be negative, got {checked:g}")
    return checked


def parse_options(document: dict[str, Any], source: str,
                  base: DeploymentOptions | None = None) -> DeploymentOptions:
    """Options from a parsed TOML document (module docstring), over ``base``."""
    values: dict[str, Any] = {}
    for section, table in document.items():
        if section == "preprocess":   # not a deployment option: mcudeploy.preprocess.spec reads it
            continue
        if section not in SECTIONS:
            raise UsageError(f"{source}: unknown section [{section}]; known sections are "
                             f"{', '.join(f'[{s}]' for s in SECTIONS)}")
        if not isinstance(table, dict):
            raise UsageError(f"{source}: [{section}] must be a table of keys, got {table!r}")
        for key, value in table.items():
            spec = SECTIONS[section].get(key)
            if spec is None:
                raise UsageError(f"{source}: [{section}] unknown key {key!r}; known keys are "
                                 f"{', '.join(SECTIONS[section])}")
            values[spec.field] = _check(spec, value, f"{source}: [{section}] {key}")
    return replace(base or DeploymentOptions(), **values)


def load_options(path: str | Path, base: DeploymentOptions | None = None) -> DeploymentOptions:
    """Options from a ``--config`` TOML file (module docstring)."""
    path = Path(path)
    return parse_options(read_toml(path, "--config"), str(path), base)


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _toml_value(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, TilingRegion):
        value = value.to_table()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(key)} = {_toml_value(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def options_toml(options: DeploymentOptions, *, full: bool = False, header: str = "") -> str:
    """``options`` as a ``--config`` file: every key (``full``) or those that differ from the
    defaults; ``None`` values are left out (they are the defaults of optional keys)."""
    defaults = DeploymentOptions()
    lines = [f"# {line}" for line in header.splitlines()]
    for section, specs in SECTIONS.items():
        rows = []
        for key, spec in specs.items():
            value = getattr(options, spec.field)
            if value is None or (not full and value == getattr(defaults, spec.field)):
                continue
            rows.append(f"{key} = {_toml_value(dict(value) if spec.kind == 'counts' else value)}")
        if rows:
            lines += ([""] if lines else []) + [f"[{section}]"] + rows
    return "\n".join(lines) + "\n"


def option_fields() -> list[str]:
    return [f.name for f in fields(DeploymentOptions)]
