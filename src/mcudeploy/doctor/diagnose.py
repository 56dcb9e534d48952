"""Match a text (a log, an error message, a run's warnings and errors) against the knowledge base.

    diagnose(text, exit_code=None) -> list[Diagnosis]

Each line of ``text`` is tried against every entry's patterns, in the knowledge base's
order; an entry is reported once, at the first line it matches, with the named groups of
that match (the bytes overflowed, the region, the node...) completed by those of its later
matches. The diagnoses come in the
order of those lines. An entry that ``supersedes`` others replaces them on a line both match
(ST's "Unsupported layer types: Lambda" is the Keras Lambda, not an unknown operator). When nothing matches and ``exit_code`` is one of mcudeploy's, the
entry that explains that exit code is reported instead (``matched_by = "exit code"``).
An empty list means the doctor does not know.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .knowledge import Entry, fill, load_knowledge

MAX_LINE = 4000      # longer lines are cut before matching (a log line, not a file)


@dataclass(frozen=True)
class Diagnosis:
    entry: Entry
    line: str                       # the line that matched (cut to MAX_LINE)
    line_number: int                # 1-based; 0 when matched by exit code
    values: dict[str, str] = field(default_factory=dict)
    matched_by: str = "pattern"     # "pattern" or "exit code"
    occurrences: int = 1

    @property
    def cause(self) -> str:
        return fill(self.entry.cause, self.values)

    @property
    def fix(self) -> str:
        return fill(self.entry.fix, self.values)

    @property
    def check(self) -> str:
        return fill(self.entry.check, self.values)

    def to_dict(self) -> dict:
        return {"id": self.entry.id, "title": self.entry.title, "source": self.entry.source,
                "line": self.line, "line_number": self.line_number, "values": dict(self.values),
                "matched_by": self.matched_by, "occurrences": self.occurrences,
                "cause": self.cause, "fix": self.fix, "check": self.check}


def diagnose(text: str, exit_code: int | None = None, entries: tuple[Entry, ...] | None = None) -> list[Diagnosis]:
    """The diagnoses of ``text`` (module docstring)."""
    entries = load_knowledge() if entries is None else entries
    found: dict[str, Diagnosis] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()[:MAX_LINE]
        if not line:
            continue
        matches = [(entry, match) for entry in entries
                   for match in [next((m for m in (p.search(line) for p in entry.patterns) if m), None)] if match]
        superseded = {name for entry, _ in matches for name in entry.supersedes}
        for entry, match in matches:
            if entry.id in superseded:   # a more specific entry explains this line
                continue
            values = {name: value for name, value in match.groupdict().items() if value}
            if entry.id in found:      # a later line may add what the first did not say
                previous = found[entry.id]
                found[entry.id] = Diagnosis(previous.entry, previous.line, previous.line_number,
                                            {**values, **previous.values}, occurrences=previous.occurrences + 1)
            else:
                found[entry.id] = Diagnosis(entry, line, number, values)
    if not found and exit_code not in (None, 0):
        by_exit_code = next((e for e in entries if exit_code in e.exit_codes), None)
        if by_exit_code is not None:
            return [Diagnosis(by_exit_code, f"exit code {exit_code}", 0, matched_by="exit code")]
    return sorted(found.values(), key=lambda d: d.line_number)
