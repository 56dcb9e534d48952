"""Typed reads of one table of a sweep file, with errors that name the file, the table and the key.

    table = TableReader(document["axes"], "sweep.toml", "[axes]", known=AXES_KEYS)
    table.values("targets")       # a non-empty list, or None when the key is absent

Every problem is one :class:`~mcudeploy.errors.UsageError` (exit 2) saying where, what is
wrong, and what to write instead; an unknown key names the closest known one.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, overload

from ..errors import UsageError, did_you_mean

_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")


def closest(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known``, or ``""`` (:func:`mcudeploy.errors.did_you_mean`)."""
    return did_you_mean(name, known)


def check_keys(table: dict, known: Iterable[str], where: str, noun: str = "key") -> None:
    """``where`` is e.g. ``"sweep.toml: [axes]"``; an unknown key names the closest known one."""
    known = list(known)
    for key in table:
        if key not in known:
            raise UsageError(f"{where} unknown {noun} {key!r}{closest(key, known)} (known {noun}s: {', '.join(known)})")


def expand_path(text: str, base: Path, where: str) -> Path:
    """``text`` with ``${VAR}`` / ``${VAR:-default}`` / ``$VAR`` replaced and ``~`` expanded; a
    relative result is relative to ``base`` (the sweep file's folder). A variable set in the
    environment to a relative path at the start of ``text`` is relative to the current folder."""
    def substitute(match: re.Match) -> str:
        name = match.group(1) or match.group(3)
        value = os.environ.get(name)
        if value:
            return os.path.abspath(value) if match.start() == 0 else value
        if match.group(2) is not None:
            return match.group(2)
        raise UsageError(f"{where} {text!r}: environment variable {name} is not set; set it or write "
                         f"${{{name}:-DEFAULT}}")
    path = Path(os.path.expanduser(_VARIABLE.sub(substitute, text)))
    return path if path.is_absolute() else base / path


class TableReader:
    """Reads keys of one TOML table (module docstring)."""

    def __init__(self, table: Any, source: str, section: str, known: Iterable[str]):
        if not isinstance(table, dict):
            raise UsageError(f"{source}: {section} must be a table of keys, got {table!r}")
        self.table, self.source, self.section = table, source, section
        check_keys(table, known, f"{source}: {section}")

    def where(self, key: str) -> str:
        return f"{self.source}: {self.section}" + (f" {key}" if key else "") + ":"

    def has(self, key: str) -> bool:
        return key in self.table

    @overload
    def text(self, key: str, default: str) -> str: ...
    @overload
    def text(self, key: str, default: None = None) -> str | None: ...
    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.table.get(key, default)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{self.where(key)} expected non-empty text, got {value!r}")
        return value

    def number(self, key: str, default: float, *, minimum: float = 0.0, strict: bool = True) -> float:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                value < minimum or (strict and value == minimum):
            bound = f"greater than {minimum:g}" if strict else f"at least {minimum:g}"
            raise UsageError(f"{self.where(key)} expected a number {bound}, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"{self.where(key)} expected a whole number of at least {minimum}, got {value!r}")
        return value

    def values(self, key: str) -> list | None:
        """The list at ``key`` (an axis): ``None`` when absent, an error when empty."""
        if key not in self.table:
            return None
        value = self.table[key]
        if not isinstance(value, list):
            raise UsageError(f"{self.where(key)} expected a list of values (an axis), got {value!r}; write "
                             f"{key} = [{value!r}] for one value")
        if not value:
            raise UsageError(f"{self.where(key)} the axis has no values; give at least one, or remove the "
                             "key to use the default")
        return value

    def texts(self, key: str) -> list[str] | None:
        values = self.values(key)
        if values is not None:
            for index, value in enumerate(values):
                if not isinstance(value, str) or not value.strip():
                    raise UsageError(f"{self.where(f'{key}[{index}]')} expected non-empty text, got {value!r}")
        return values
