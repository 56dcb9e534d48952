"""Each stage of a deploy recorded as one run of the run store (:mod:`mcudeploy.runs`).

    recorder = StageRecorder(project, argv, store_path=None, enabled=True, tags={})
    result = recorder.run("quantize", lambda: quantize(context), model=path)

A stage run has command ``deploy``, its ``stage`` set, the tag ``deploy=<id>`` (the id of
the deploy's first run, so ``runs list`` shows one run per stage and the tag ties them
together), the project's settings as its configuration (flat ``section.key`` values, so
``runs diff`` of two deploys names the option that changed), the stage's figures, warnings
(every ``mcudeploy.*`` log warning while it ran), the files it wrote, and its
:class:`~.records.StageResult` as the payload section ``stage`` (a resumed deploy reads it
back). A stage that raises an :class:`~mcudeploy.errors.McuDeployError` is a ``failed`` run
with the error's text and exit code; a skipped stage is an ``ok`` run tagged
``status=skipped`` with the reason as a warning.

The store is required: it is opened first, and a store that is locked (after
:data:`STORE_TIMEOUT_S`), corrupt, or not a run store stops the deploy before any stage with
one line (exit 2); the file is never rewritten (:mod:`mcudeploy.runs.schema`). With
recording switched off (``--no-record``, ``MCUDEPLOY_NO_RECORD=1``) the runs stay in memory,
which is all the report needs.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import McuDeployError, ValidationFailed
from ..runs.current import active_run
from ..runs.live import INTERRUPTED_EXIT_CODE, Run, begin_record
from ..runs.location import GitCommit, default_store_path
from ..runs.records import RunRecord
from ..runs.store import RunStore
from .project import Project
from .records import FAILED, SKIPPED, StageResult

COMMAND = "deploy"
STORE_TIMEOUT_S = 5.0
UNHASHED = ("project.output",)   # where the outputs go does not change what is computed


class _Warnings(logging.Handler):
    """Every ``mcudeploy.*`` warning (not the run store's own) as a warning of ``run``."""

    def __init__(self, run: Run):
        super().__init__(level=logging.WARNING)
        self.run = run
        self.logged: set[str] = set()     # already on the console through logging

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith("mcudeploy.runs"):
            self.logged.add(record.getMessage())
            self.run.warn(record.getMessage())


class StageRecorder:
    """Opens the store (module docstring) and records stage after stage."""

    def __init__(self, project: Project, argv: Sequence[str], *, store_path: Path | None = None,
                 enabled: bool = True, tags: dict[str, str] | None = None):
        self.project = project
        self.argv = list(argv)
        self.tags = dict(tags or {})
        self.store = RunStore.open(store_path or default_store_path(project.folder),
                                   timeout=STORE_TIMEOUT_S) if enabled else None
        self.deploy_id: str | None = None
        self.records: dict[str, RunRecord] = {}
        self._commit: GitCommit | None = GitCommit(project.folder)
        self._git: str | None = None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def _begin(self, stage: str, model: Path | None) -> Run:
        if self._commit is not None:
            self._git, self._commit = self._commit.result(), None
        details: dict[str, Any] = {"config": self.project.config(), "unhashed": UNHASHED, "model": model,
                   "target": self.project.deployment.target, "stage": stage, "tags": self.tags,
                   "git_commit": self._git}
        if self.store is not None:
            run = self.store.begin(COMMAND, self.argv, **details)
        else:
            run = Run(begin_record(COMMAND, self.argv, **details))
        if self.deploy_id is None:
            self.deploy_id = str(run.id) if run.id is not None else datetime.now().strftime("local-%Y%m%d-%H%M%S")
        run.tag("deploy", self.deploy_id)
        return run

    def run(self, stage: str, compute: Callable[[], StageResult], *, model: Path | None = None) -> StageResult:
        """Run ``compute`` as the recorded run of ``stage`` (module docstring); its result."""
        run = self._begin(stage, model)
        handler = _Warnings(run)
        logging.getLogger("mcudeploy").addHandler(handler)
        start = time.perf_counter()
        try:
            with active_run(run):
                result = compute()
        except ValidationFailed as error:     # the figures it measured are kept
            result = StageResult(stage, FAILED, reason=str(error), exit_code=error.exit_code,
                                 figures=error.figures, details=error.details)
        except McuDeployError as error:
            result = StageResult(stage, FAILED, reason=str(error), exit_code=error.exit_code)
        except BaseException as error:   # an interruption or a bug: recorded, then raised
            run.finish(INTERRUPTED_EXIT_CODE if isinstance(error, KeyboardInterrupt) else 1,
                       f"{type(error).__name__}: {error}")
            raise
        finally:
            logging.getLogger("mcudeploy").removeHandler(handler)
        self._finish(run, result, time.perf_counter() - start, handler.logged)
        return result

    def _finish(self, run: Run, result: StageResult, seconds: float, logged: set[str]) -> None:
        result.seconds, result.run_id = seconds, run.id
        run.figures(result.figures)
        if result.status == SKIPPED:
            run.tag("status", SKIPPED)
            run.warn(f"skipped: {result.reason}")
        for relative in result.artefacts:
            try:
                run.artefact(self.project.folder / relative)
            except OSError as error:
                run.warn(f"artefact {relative} not recorded: {error}")
        result.warnings = [text for text in run.record.warnings if not text.startswith("skipped: ")]
        result.notes = [text for text in result.warnings if text not in logged]   # not shown yet
        run.payload_section("stage", result.to_dict())
        run.finish(result.exit_code, result.reason if result.status == FAILED else None)
        self.records[result.stage] = run.record

    def stored(self, run_id: int | None) -> RunRecord | None:
        """The run ``run_id`` from the store with its payload, or None (no store, not there)."""
        if self.store is None or run_id is None:
            return None
        try:
            return self.store.get(run_id, payload=True)
        except McuDeployError:
            return None
