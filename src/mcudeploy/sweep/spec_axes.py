"""The axes of a sweep file that need more than a list: generators, option sets and option axes,
input shapes, quantization choices, targets (used by :mod:`.spec`).

Generator parameters: a list of values, one value, or an inclusive range
``{start = 128, stop = 512, step = 32}`` (128, 160, ..., 512). Option values are checked as
``--config`` values are (:meth:`~mcudeploy.options.DeploymentOptions.with_values`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..options import OPTION_SPECS, DeploymentOptions
from ..targets import builtin_names, load_target
from .toml_reader import TableReader, check_keys, closest, expand_path

QUANTIZATIONS = ("as-is", "int8", "int16", "mixed")
GENERATOR_KEYS = ("callable", "name", "parameters")
MAX_RANGE_VALUES = 10_000


@dataclass(frozen=True)
class GeneratorSpec:
    """A model generator: ``callable`` as written, its file for the ``file.py:function`` form,
    and the parameter axes (name -> values)."""
    callable: str
    name: str
    parameters: tuple[tuple[str, tuple[Any, ...]], ...]
    file: Path | None = None

    def parameter_sets(self) -> list[dict[str, Any]]:
        names = [name for name, _ in self.parameters]
        return [dict(zip(names, values)) for values in itertools.product(*(v for _, v in self.parameters))]


@dataclass(frozen=True)
class OptionSet:
    """One named set of DeploymentOptions values (``[axes] option_sets``)."""
    name: str
    values: tuple[tuple[str, Any], ...]


def _check_option(field: str, value: Any, where: str) -> Any:
    if field == "target":
        raise UsageError(f"{where} the target is an axis of its own: give [axes] targets = [...]")
    if field not in OPTION_SPECS:
        raise UsageError(f"{where} {field!r} is not a deployment option{closest(field, OPTION_SPECS)} (options: "
                         f"{', '.join(name for name in OPTION_SPECS if name != 'target')})")
    try:
        DeploymentOptions().with_values(**{field: value})
    except UsageError as error:
        raise UsageError(f"{where} {error}") from None
    return value


def parse_options(table: Any, source: str) -> DeploymentOptions:
    """``[options]``: DeploymentOptions fields for every cell."""
    if not isinstance(table, dict):
        raise UsageError(f"{source}: [options] must be a table of deployment options, got {table!r}")
    values = {field: _check_option(field, value, f"{source}: [options] {field}:") for field, value in table.items()}
    return DeploymentOptions().with_values(**values)


def option_sets(axes: TableReader) -> tuple[OptionSet, ...]:
    tables = axes.values("option_sets")
    if tables is None:
        return (OptionSet("default", ()),)
    sets, names = [], set()
    for index, table in enumerate(tables):
        where = axes.where(f"option_sets[{index}]")
        if not isinstance(table, dict):
            raise UsageError(f"{where} expected a table {{name = \"...\", option = value, ...}}, got {table!r}")
        name = table.get("name", f"set{index}")
        if not isinstance(name, str) or not name or name in names:
            raise UsageError(f"{where} name {name!r}: give each option set a different, non-empty name")
        names.add(name)
        values = tuple((field, _check_option(field, value, where)) for field, value in table.items() if field != "name")
        sets.append(OptionSet(name, values))
    return tuple(sets)


def option_axes(axes: TableReader) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if not axes.has("options"):
        return ()
    table = TableReader(axes.table["options"], axes.source, "[axes.options]", [n for n in OPTION_SPECS] + ["target"])
    found = []
    for field in table.table:
        values = table.values(field)
        assert values is not None  # the field is in the table
        found.append((field, tuple(_check_option(field, value, table.where(field)) for value in values)))
    return tuple(found)


def input_shape_axis(axes: TableReader) -> tuple[dict[str, tuple[int, ...]], ...]:
    tables = axes.values("input_shapes")
    if tables is None:
        return ({},)
    shapes = []
    for index, table in enumerate(tables):
        where = axes.where(f"input_shapes[{index}]")
        if not isinstance(table, dict):
            raise UsageError(f"{where} expected a table {{input_name = [1, 3, 96, 96]}} ({{}}: as declared), got {table!r}")
        for name, shape in table.items():
            if not isinstance(shape, list) or not shape or any(
                    isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
                raise UsageError(f"{where} {name}: expected a list of positive dimensions, got {shape!r}")
        shapes.append({name: tuple(shape) for name, shape in table.items()})
    return tuple(shapes)


def quantization_axis(axes: TableReader, stages: tuple[str, ...]) -> tuple[str, ...]:
    names = axes.texts("quantization")
    if names is None:
        return ("int8",) if "quantize" in stages else ("as-is",)
    if "quantize" not in stages and any(name != "as-is" for name in names):
        raise UsageError(f"{axes.where('quantization')} quantization choices need the quantize stage; add "
                         "\"quantize\" to [sweep] stages or remove the axis")
    for name in names:
        if name not in QUANTIZATIONS:
            raise UsageError(f"{axes.where('quantization')} {name!r} is not a quantization choice"
                             f"{closest(name, QUANTIZATIONS)} (choices: {', '.join(QUANTIZATIONS)}: int16 = 16x8, "
                             "mixed = int8 with the sensitive layers in int16)")
    return tuple(dict.fromkeys(names))


def check_targets(names: list[str], axes: TableReader, folder: Path) -> tuple[str, ...]:
    """Built-in names as they are, target files as absolute paths; each one loads."""
    builtins = set(builtin_names())
    resolved = []
    for index, name in enumerate(names):
        where = axes.where(f"targets[{index}]")
        if name not in builtins and (name.endswith(".toml") or "/" in name):
            path = expand_path(name, folder, where)
            if not path.is_file():
                raise UsageError(f"{where} no such target file {path}")
            name = str(path.resolve())
        elif name not in builtins:
            raise UsageError(f"{where} unknown target {name!r}{closest(name, builtins)} (built-in: "
                             f"{', '.join(sorted(builtins))}; or a target .toml file)")
        try:
            load_target(name)
        except UsageError as error:
            raise UsageError(f"{where} {error}") from None
        resolved.append(name)
    return tuple(dict.fromkeys(resolved))


def _parameter_values(name: str, value: Any, where: str) -> tuple[Any, ...]:
    if isinstance(value, dict):
        check_keys(value, ("start", "stop", "step"), f"{where} {name}")
        start: Any = value.get("start")   # TOML values of any type, checked below
        stop: Any = value.get("stop")
        step: Any = value.get("step", 1)
        numbers = (start, stop, step)
        if any(isinstance(n, bool) or not isinstance(n, (int, float)) for n in numbers) or step <= 0 or stop < start:
            raise UsageError(f"{where} {name}: a range is {{start = A, stop = B, step = S}} with numbers A <= B and "
                             f"S > 0, got {value!r}")
        count = int((stop - start) / step + 1e-9) + 1
        if count > MAX_RANGE_VALUES:
            raise UsageError(f"{where} {name}: the range has {count} values (at most {MAX_RANGE_VALUES})")
        return tuple(start + index * step for index in range(count))
    if isinstance(value, list):
        if not value:
            raise UsageError(f"{where} {name}: the axis has no values; give at least one")
        return tuple(value)
    return (value,)


def parse_generators(tables: Any, source: str, folder: Path) -> tuple[GeneratorSpec, ...]:
    """``[[generators]]``: each callable is checked now, without running it (:mod:`.callables`:
    a file outside the sweep's folder, a module form or a missing function is an error before
    any cell runs)."""
    from .callables import confined_callable

    if not isinstance(tables, list):
        raise UsageError(f"{source}: generators must be an array of tables: write [[generators]]")
    generators = []
    for index, table in enumerate(tables):
        reader = TableReader(table, source, f"[[generators]] #{index + 1}", GENERATOR_KEYS)
        text = reader.text("callable")
        if text is None or ":" not in text:
            raise UsageError(f"{reader.where('callable')} give the generator as \"file.py:function\" (a file in "
                             f"the sweep file's folder), got {text!r}")
        file = confined_callable(text, folder, reader.where("callable"))
        parameters = reader.table.get("parameters", {})
        if not isinstance(parameters, dict):
            raise UsageError(f"{reader.where('parameters')} expected a table of parameter = values, got {parameters!r}")
        axes = tuple((name, _parameter_values(name, value, reader.where("parameters")))
                     for name, value in parameters.items())
        generators.append(GeneratorSpec(text, reader.text("name", text.rpartition(":")[2]), axes, file))
    return tuple(generators)
