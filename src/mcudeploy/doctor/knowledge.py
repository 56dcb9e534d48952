"""The doctor's knowledge base: :file:`knowledge.toml` (data) loaded into checked entries.

Each :class:`Entry` has symptom patterns (regular expressions, case-insensitive), a cause,
a fix and the mcudeploy command that checks it. Texts are templates: ``{name}`` inserts
the named group ``name`` of the matching pattern, ``{name_kib}`` a numeric group divided by
1024, and a ``[[ ... ]]`` segment is kept only when every ``{name}`` inside it matched.
:func:`load_knowledge` checks the file (keys, unique ids, patterns that compile, no
placeholder outside a segment that some pattern does not define) and raises a
:class:`~mcudeploy.errors.UsageError` naming the file and the entry otherwise.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import UsageError

KNOWLEDGE_FILE = Path(__file__).with_name("knowledge.toml")
REQUIRED_KEYS = ("id", "title", "source", "patterns", "cause", "fix", "check")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_SEGMENT = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    source: str
    patterns: tuple[re.Pattern, ...]
    cause: str
    fix: str
    check: str
    exit_codes: tuple[int, ...] = ()
    supersedes: tuple[str, ...] = ()   # entries this more specific one replaces on a line both match


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with its placeholders and optional segments resolved (module docstring)."""
    values = {**values, **{f"{name}_kib": f"{int(value.replace(',', '')) / 1024:.1f}"
                           for name, value in values.items() if value.replace(",", "").isdigit()}}

    def segment(match: re.Match) -> str:
        inside = match.group(1)
        needed = _PLACEHOLDER.findall(inside)
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], inside) if all(n in values for n in needed) else ""

    text = _SEGMENT.sub(segment, template)
    text = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)
    return " ".join(text.split())


@lru_cache(maxsize=4)
def load_knowledge(path: Path = KNOWLEDGE_FILE) -> tuple[Entry, ...]:
    """The checked entries of ``path`` (module docstring), in file order."""
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{path}: cannot read the doctor's knowledge base: {error}") from None
    entries, seen = [], set()
    for index, raw in enumerate(document.get("entry", [])):
        entry = _entry(path, index, raw)
        if entry.id in seen:
            raise UsageError(f"{path}: entry id {entry.id!r} appears twice; ids must be unique")
        seen.add(entry.id)
        entries.append(entry)
    for entry in entries:
        unknown = set(entry.supersedes) - seen
        if unknown:
            raise UsageError(f"{path}: entry {entry.id!r} supersedes unknown entries {', '.join(sorted(unknown))}")
    return tuple(entries)


def _entry(path: Path, index: int, raw: dict) -> Entry:
    where = f"{path}: entry {raw.get('id', index)!r}"
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        raise UsageError(f"{where} lacks {', '.join(missing)}")
    try:
        patterns = tuple(re.compile(text, re.IGNORECASE) for text in raw["patterns"])
    except re.error as error:
        raise UsageError(f"{where}: pattern does not compile: {error}") from None
    always = set.intersection(*(set(pattern.groupindex) for pattern in patterns)) if patterns else set()
    always |= {f"{name}_kib" for name in always}
    for key in ("cause", "fix", "check"):
        loose = set(_PLACEHOLDER.findall(_SEGMENT.sub("", raw[key]))) - always
        if loose:
            raise UsageError(f"{where}: {key} uses {', '.join(sorted(loose))} outside a [[ ]] segment, but "
                             "not every pattern defines it")
    return Entry(raw["id"], raw["title"], raw["source"], patterns, raw["cause"], raw["fix"], raw["check"],
                 tuple(int(code) for code in raw.get("exit_codes", ())), tuple(raw.get("supersedes", ())))
