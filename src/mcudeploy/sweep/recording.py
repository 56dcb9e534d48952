"""A sweep in the run store: one run per cell, and the finished cells a resumed sweep skips.

    recorder = CellRecorder(store_path, spec, sweep_id)
    done = recorder.finished()                      # config hash -> RunRecord of a finished cell
    run_id = recorder.record(cell, result, payload)

Each cell is one run of command ``sweep-cell``, written by the client as the cell's result
arrives (a worker may be on a machine that cannot reach the store; one writer per sweep):
its configuration is :attr:`.cells.Cell.config` (hash included), its model the model file
(a generated model: its file in the blob cache), its stage the cell's stages, its figures,
warnings, error, exit code and payload the cell's (:mod:`.cell_runner`), plus the figure
``cell_seconds`` and the tags ``sweep`` (name), ``sweep_id``, ``cell`` (index), ``model``,
``option_set``, ``outcome`` (ok | failed | timeout), ``attempts`` and ``worker``. The store
handles the sweep command's own run being open at the same time (WAL, short transactions).

Resume: a cell counts as finished when a ``sweep-cell`` run with its configuration hash has
status ok or failed (the latest one wins); an ``incomplete`` run (the client died while
writing) is run again. A run's started / finished times are those of its recording; the
git commit is read once per sweep (one ``git`` process per cell was a third of the engine's
per-cell cost).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..runs.location import git_commit
from ..runs.records import STATUS_FAILED, STATUS_OK, RunRecord
from ..runs.store import RunStore
from .cells import Cell
from .results import STATUS_TIMEOUT, CellResult
from .spec import SweepSpec

COMMAND = "sweep-cell"


def result_of_record(cell: Cell, record: RunRecord) -> CellResult:
    """A finished cell as its run records it."""
    figures = {name: value for name, value in record.figures.items() if name != "cell_seconds"}
    status = STATUS_TIMEOUT if record.tags.get("outcome") == STATUS_TIMEOUT else record.status
    return CellResult(cell.index, status, record.exit_code or 0, record.errors[-1] if record.errors else None,
                      figures, list(record.warnings), record.figures.get("cell_seconds", 0.0),
                      record.tags.get("worker"), int(record.tags.get("attempts", "1") or 1), True, record.id)


class CellRecorder:
    def __init__(self, store_path: Path, spec: SweepSpec, sweep_id: str):
        self.store = RunStore.open(store_path)
        self.spec, self.sweep_id = spec, sweep_id
        self.git_commit = git_commit()

    def close(self) -> None:
        self.store.close()

    def finished(self) -> dict[str, RunRecord]:
        found: dict[str, RunRecord] = {}
        for record in self.store.list_runs(command=COMMAND):      # oldest first: the latest wins
            if record.status in (STATUS_OK, STATUS_FAILED):
                found[record.config_hash] = record
        return found

    def _argv(self, cell: Cell) -> list[str]:
        return ["sweep", str(self.spec.path), "--cells", str(cell.index)]

    def record(self, cell: Cell, result: CellResult, payload: dict[str, Any] | None) -> int | None:
        model = cell.blobs.get("model")
        tags = {"sweep": self.spec.name, "sweep_id": self.sweep_id, "cell": str(cell.index),
                "model": cell.model.label, "option_set": cell.option_set, "outcome": result.status,
                "attempts": str(result.attempts), "worker": result.worker or ""}
        run = self.store.begin(COMMAND, self._argv(cell), config=cell.config,
                               model=model.path if model is not None else None, target=cell.target_label,
                               stage=",".join(cell.stages), tags=tags, git_commit=self.git_commit)
        run.figures(result.figures)
        run.figure("cell_seconds", round(result.seconds, 6))
        for text in result.warnings:
            run.warn(text)
        for section, data in (payload or {}).items():
            run.payload_section(section, data)
        run.finish(result.exit_code, result.error)
        return run.id
