"""Field-by-field checking of a target description read from TOML or JSON.

Input: one table (a ``dict``) of the file, the table's path for messages (``[core]``,
``[[regions]] "SRAM1"``) and a list of :class:`Field` s. Output: a dict of checked, converted
values. Every problem raises :class:`~mcudeploy.targets.model.TargetError` naming the file,
the key, what is wrong and what is accepted: unknown keys, missing keys, wrong types,
values out of range or not among the choices.

Sizes may be written as an integer number of bytes or as text with a binary unit:
``"128K"``, ``"128 KiB"``, ``"1M"``, ``"32 MiB"`` (K = 1024 bytes, M = 1024^2, G = 1024^3).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..units import parse_size
from .model import TargetError

REQUIRED = object()
MAX_INTEGER = 2 ** 64
MAX_INTEGER_TEXT = 40
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

def _bounded(number: int) -> int:
    if abs(number) > MAX_INTEGER:
        raise ValueError(f"{number} is out of range (at most 2**64)")
    return number


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and len(value) <= MAX_INTEGER_TEXT:
            try:
                return _bounded(int(value, 0))  # "0x20000000" in JSON
            except ValueError:
                pass
        raise ValueError(f"expected an integer, got {_shown(value)}")
    return _bounded(value)


def _as_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


def _shown(value: Any) -> str:
    """``repr(value)`` cut to a readable length (a value may be a 100,000-deep list)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def check_identifier(name: str, key: str, where: str, source: str) -> str:
    """``name`` if it is a C / linker-script identifier (``[A-Za-z_][A-Za-z0-9_]*``): region
    names become section and symbol names in generated linker scripts and C code."""
    if not IDENTIFIER.fullmatch(name):
        raise TargetError(f"{source}: {where} key {key!r}: {_shown(name)} is not a valid region "
                          "name; use letters, digits and '_' (not first a digit), e.g. \"SRAM1\": "
                          "it becomes a section name in the generated linker script")
    return name


def _as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {_shown(value)}")
    return value


def _as_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {_shown(value)}")
    return value


def _as_str_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of strings, got {_shown(value)}")
    return tuple(value)


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "int": _as_int, "float": _as_float, "str": _as_str, "bool": _as_bool,
    "size": parse_size, "strs": _as_str_list,
}


@dataclass(frozen=True)
class Field:
    """One key of a table: its type (a :data:`CONVERTERS` name), default, allowed choices
    and lower bound (``minimum``; sizes and clocks must be positive)."""
    key: str
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    minimum: float | None = None
    help: str = ""


def check_table(table: Any, fields: list[Field], where: str, source: str,
                also_known: tuple[str, ...] = ()) -> dict[str, Any]:
    """Checked values of ``table`` keyed by field key (defaults filled in). ``also_known``
    names keys the caller checks itself (sub-tables), for the unknown-key message."""
    if not isinstance(table, dict):
        raise TargetError(f"{source}: {where} must be a table of keys, got {_shown(table)}")
    known = {f.key for f in fields} | set(also_known)
    unknown = sorted(set(table) - known)
    if unknown:
        raise TargetError(f"{source}: {where}: unknown key(s) {', '.join(map(repr, unknown))}; "
                          f"known keys are {', '.join(sorted(known))}")
    result: dict[str, Any] = {}
    for spec in fields:
        if spec.key not in table:
            if spec.default is REQUIRED:
                raise TargetError(f"{source}: {where}: missing key {spec.key!r}"
                                  f"{' (' + spec.help + ')' if spec.help else ''}")
            result[spec.key] = spec.default
            continue
        result[spec.key] = _check_value(table[spec.key], spec, where, source)
    return result


def _check_value(raw: Any, spec: Field, where: str, source: str) -> Any:
    try:
        value = CONVERTERS[spec.kind](raw)
    except ValueError as err:
        raise TargetError(f"{source}: {where} key {spec.key!r}: {err}") from None
    if spec.choices and value not in spec.choices:
        raise TargetError(f"{source}: {where} key {spec.key!r}: {_shown(value)} is not one of "
                          f"{', '.join(map(repr, spec.choices))}")
    if spec.minimum is not None and value < spec.minimum:
        raise TargetError(f"{source}: {where} key {spec.key!r}: must be at least "
                          f"{spec.minimum:g}, got {_shown(raw)}")
    return value
