"""The handle of a run while it happens: figures, artefacts, warnings, tags, payload.

    run.figure("arena_bytes", 33312); run.artefact(path); run.warn(text); run.tag("sweep", "a")
    run.payload_section("plan", {...}); run.flush(); run.finish(exit_code)

A :class:`Run` buffers what it is told and writes it to its store in one transaction at
:meth:`Run.finish` (or :meth:`Run.flush`, for long runs). A run with no store (recording
switched off, or the store failed) keeps everything in memory, so ``--html`` still has
its data. A store that fails while a run is being written is reported once as a warning
(logger ``mcudeploy.runs``) and dropped: recording never turns a success into a failure.
:data:`NULL_RUN` (defined in :mod:`.current`) is the run of code outside any recorded command: it ignores
everything, so library code may call ``current_run().figure(...)`` unconditionally.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shlex
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from .. import __version__
from ..errors import McuDeployError
from .current import NULL_RUN  # noqa: F401  (defined there: reading it needs none of this module)
from .payload import PAYLOAD_SCHEMA
from .records import STATUS_FAILED, STATUS_OK, Artefact, RunRecord, sha256_of_file

if TYPE_CHECKING:
    from .store import RunStore

log = logging.getLogger("mcudeploy.runs")
MAX_ARTEFACT_FILES = 500       # files recorded from one output folder
INTERRUPTED_EXIT_CODE = 130


def now() -> str:
    """The current time as ISO 8601 UTC with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def config_hash(config: Mapping[str, Any], unhashed: Sequence[str] = ()) -> str:
    """SHA-256 of the canonical JSON of ``config`` without the keys in ``unhashed``."""
    kept = {key: value for key, value in config.items() if key not in set(unhashed)}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def begin_record(command: str, argv: Sequence[str], *, config: Mapping[str, Any] | None = None,
                 unhashed: Sequence[str] = (), model: str | Path | None = None, target: str | None = None,
                 stage: str | None = None, tags: Mapping[str, str] | None = None,
                 git_commit: str | None = None) -> RunRecord:
    """A new run's record (not stored yet)."""
    config = dict(config or {})
    return RunRecord(id=None, command=command, command_line=shlex.join(["mcudeploy", *argv]),
                     argv=list(argv), started_at=now(), stage=stage, config=config,
                     config_hash=config_hash(config, unhashed),
                     model_path=str(model) if model is not None else None, tool_version=__version__,
                     target=target, git_commit=git_commit, working_dir=os.getcwd(), tags=dict(tags or {}))


class Run:
    """A run being recorded (module docstring). ``store=None``: kept in memory only."""

    active = True

    def __init__(self, record: RunRecord, store: "RunStore | None" = None):
        self.record = record
        self.store = store
        self.exit_code: int | None = None   # set by the block of :meth:`recording`, if not 0
        self._written: dict[str, int] = {}

    @property
    def id(self) -> int | None:
        return self.record.id

    def figure(self, name: str, value: float | int | bool | None) -> None:
        """Record one number (``None`` and NaN are skipped: they are not figures)."""
        if value is None:
            return
        number = float(value)
        if not math.isnan(number):
            self.record.figures[name] = number

    def figures(self, values: Mapping[str, float | int | bool | None]) -> None:
        for name, value in values.items():
            self.figure(name, value)

    def warn(self, text: str) -> None:
        self.record.warnings.append(str(text))

    def error(self, text: str) -> None:
        self.record.errors.append(str(text))

    def tag(self, name: str, value: str = "") -> None:
        self.record.tags[str(name)] = str(value)

    def artefact(self, path: str | Path) -> None:
        """Record a written file (path, SHA-256, size); a folder records the files inside."""
        path = Path(path)
        files = sorted(p for p in path.rglob("*") if p.is_file())[:MAX_ARTEFACT_FILES] \
            if path.is_dir() else [path] if path.is_file() else []
        for file in files:
            self.record.artefacts = [a for a in self.record.artefacts if a.path != str(file)]
            self.record.artefacts.append(Artefact(str(file), sha256_of_file(file), file.stat().st_size))

    def payload_section(self, section: str, data: Any) -> None:
        """Set one section of the run's payload (schema: :mod:`.payload`)."""
        if self.record.payload is None:
            self.record.payload = {"schema": PAYLOAD_SCHEMA}
        self.record.payload[section] = data

    def flush(self) -> None:
        """Write what was recorded so far (a failing store is reported once and dropped)."""
        if self.store is None:
            return
        from .schema import RunStoreError
        try:
            self.store.write_run(self.record, self._written)
        except RunStoreError as error:
            log.warning("run not recorded: %s", error)
            self.store = None

    def finish(self, exit_code: int, error: str | None = None) -> None:
        """End the run: ``ok`` when ``exit_code`` is 0, else ``failed``; then write it."""
        if error:
            self.error(error)
        self.record.exit_code = int(exit_code)
        self.record.status = STATUS_OK if exit_code == 0 else STATUS_FAILED
        self.record.finished_at = now()
        self.flush()

    @contextmanager
    def recording(self, exit_code: int = 0) -> Iterator["Run"]:
        """Finish the run when the block ends: with ``exit_code``, or as failed with the
        exception's text and exit code (the exception propagates)."""
        try:
            yield self
        except McuDeployError as failure:
            self.finish(failure.exit_code, str(failure))
            raise
        except KeyboardInterrupt:
            self.finish(INTERRUPTED_EXIT_CODE, "interrupted")
            raise
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            self.finish(code, None if code == 0 else f"exit {stop.code}")
            raise
        except BaseException as bug:
            self.finish(1, f"{type(bug).__name__}: {bug}")
            raise
        else:
            self.finish(self.exit_code if self.exit_code is not None else exit_code)


