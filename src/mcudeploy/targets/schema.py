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

import re
from dataclasses import dataclass
from typing import Any, Callable

from .model import TargetError

REQUIRED = object()

_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024 ** 2, "MB": 1024 ** 2,
               "MIB": 1024 ** 2, "G": 1024 ** 3, "GB": 1024 ** 3, "GIB": 1024 ** 3}
_SIZE_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(value: Any) -> int:
    """Bytes from an int or a text like ``"448 KiB"``; ``ValueError`` with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError("expected a size, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _SIZE_PATTERN.match(value)
        if match and match.group(2).upper() in _SIZE_UNITS:
            number = float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
            if number.is_integer():
                return int(number)
    raise ValueError(f"expected bytes as an integer or text like \"128K\" / \"32 MiB\", "
                     f"got {value!r}")


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str):
            try:
                return int(value, 0)  # "0x20000000" in JSON
            except ValueError:
                pass
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _as_float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


def _as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected text, got {value!r}")
    return value


def _as_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _as_str_list(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of strings, got {value!r}")
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
        raise TargetError(f"{source}: {where} must be a table of keys, got {table!r}")
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
        raise TargetError(f"{source}: {where} key {spec.key!r}: {value!r} is not one of "
                          f"{', '.join(map(repr, spec.choices))}")
    if spec.minimum is not None and value < spec.minimum:
        raise TargetError(f"{source}: {where} key {spec.key!r}: must be at least "
                          f"{spec.minimum:g}, got {raw!r}")
    return value
