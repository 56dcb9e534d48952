"""Plain records of the run store: a finished (or still open) run as read back, and its artefacts.

:class:`RunRecord` is what ``runs show`` prints, ``runs diff`` compares, ``runs export``
writes and ``report`` renders; :meth:`RunRecord.to_dict` is its JSON form (stable keys).
Statuses: ``ok`` (exit code 0), ``failed`` (any other exit code, or an exception), and
``incomplete`` (the row was written when the run began and never finished: the process died).
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_INCOMPLETE = "incomplete"
STATUSES = (STATUS_OK, STATUS_FAILED, STATUS_INCOMPLETE)


@dataclass(frozen=True)
class Artefact:
    path: str
    sha256: str
    size: int


@dataclass
class RunRecord:
    id: int | None
    command: str
    command_line: str
    argv: list[str]
    started_at: str
    status: str = STATUS_INCOMPLETE
    finished_at: str | None = None
    exit_code: int | None = None
    stage: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    config_hash: str = ""
    model_path: str | None = None
    model_sha256: str | None = None
    tool_version: str = ""
    target: str | None = None
    git_commit: str | None = None
    working_dir: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    artefacts: list[Artefact] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    payload: dict[str, Any] | None = None

    @property
    def model_name(self) -> str:
        return Path(self.model_path).name if self.model_path else ""

    def to_dict(self, *, payload: bool = True) -> dict[str, Any]:
        data = asdict(self)
        if not payload:
            data.pop("payload")
        return data


def sha256_of_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
