"""What changed between two runs, and what moved: the one command that finds a regression.

Input: two :class:`~.records.RunRecord`. Output: :class:`RunDiff` with

* ``changes`` - the inputs that differ: command, model path and SHA-256, tool version,
  target, git commit, stage, status / exit code, and each configuration key
  (``config.<key>``) whose value differs or exists in one run only;
* ``moves`` - every figure of either run: old, new and the relative change
  ``(new - old) / |old|`` (``None`` when old is 0 or one side is missing);
* ``artefacts`` - written files (by path) whose SHA-256 or size differs, or exist in one run only.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .records import RunRecord

COMPARED_FIELDS = ("command", "model_path", "model_sha256", "tool_version", "target", "git_commit",
                   "stage", "status", "exit_code")


@dataclass(frozen=True)
class Change:
    what: str
    old: Any
    new: Any


@dataclass(frozen=True)
class FigureMove:
    name: str
    old: float | None
    new: float | None

    @property
    def moved(self) -> bool:
        return self.old != self.new

    @property
    def relative(self) -> float | None:
        if self.old is None or self.new is None or self.old == 0:
            return None
        return (self.new - self.old) / abs(self.old)


@dataclass
class RunDiff:
    old: RunRecord
    new: RunRecord
    changes: list[Change] = field(default_factory=list)
    moves: list[FigureMove] = field(default_factory=list)
    artefacts: list[Change] = field(default_factory=list)

    @property
    def moved(self) -> list[FigureMove]:
        return [move for move in self.moves if move.moved]

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old.id, "new": self.new.id, "changes": [asdict(c) for c in self.changes],
                "figures": [dict(asdict(m), relative=m.relative, moved=m.moved) for m in self.moves],
                "artefacts": [asdict(c) for c in self.artefacts]}


def diff_runs(old: RunRecord, new: RunRecord) -> RunDiff:
    """The :class:`RunDiff` from ``old`` to ``new`` (module docstring)."""
    result = RunDiff(old, new)
    for name in COMPARED_FIELDS:
        if getattr(old, name) != getattr(new, name):
            result.changes.append(Change(name, getattr(old, name), getattr(new, name)))
    missing = object()
    for key in sorted(set(old.config) | set(new.config)):
        before, after = old.config.get(key, missing), new.config.get(key, missing)
        if before != after:
            result.changes.append(Change(f"config.{key}", None if before is missing else before,
                                         None if after is missing else after))
    for name in sorted(set(old.figures) | set(new.figures)):
        result.moves.append(FigureMove(name, old.figures.get(name), new.figures.get(name)))
    before = {a.path: (a.sha256, a.size) for a in old.artefacts}
    after = {a.path: (a.sha256, a.size) for a in new.artefacts}
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            result.artefacts.append(Change(path, _artefact_text(before.get(path)), _artefact_text(after.get(path))))
    return result


def _artefact_text(entry: tuple[str, int] | None) -> str | None:
    return None if entry is None else f"{entry[0][:12]} ({entry[1]} bytes)"
