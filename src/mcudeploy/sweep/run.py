"""A whole sweep: models made, cells expanded, finished cells skipped, the rest run and recorded.

    result = run_sweep(spec, SweepSettings(scheduler=None, workers=2, store=Path("runs.sqlite")))

1. **Models**: every value of the model axis becomes a blob by content (:mod:`.sources`;
   generators run here, on the client).
2. **Cells**: the product of the axes (:mod:`.cells`); the sweep's id is the hash of its
   name and its cells' configuration hashes.
3. **Resume** (with a store, and no ``only`` selection): a cell whose configuration hash a
   finished ``sweep-cell`` run has (:mod:`.recording`) is not run again, its result is read
   back (``retry_failed``: failed ones are run again).
4. **Cluster** (:mod:`.cluster`): connected before anything is recorded, so a scheduler that
   cannot be reached records nothing.
5. **Run** (:mod:`.executor`), each cell recorded the moment its result arrives: an
   interrupted sweep loses only the cells in flight, and the same command resumes it.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .blobs import Blob, BlobCache
from .cells import Cell, expand_cells
from .cluster import connect
from .executor import execute
from .progress import SweepProgress
from .recording import CellRecorder, result_of_record
from .results import STATUS_FAILED, STATUS_OK, CellResult, SweepResult
from .sources import GeneratorFailed, materialise, model_sources
from .spec import SweepSpec

GENERATOR_EXIT_CODE = 2


@dataclass(frozen=True)
class SweepSettings:
    scheduler: str | None = None          # tcp://HOST:8786, or None for an in-process LocalCluster
    workers: int | None = None            # local workers (default: one per core)
    connect_timeout: float = 5.0
    store: Path | None = None             # the run store; None: nothing recorded, nothing resumed
    retry_failed: bool = False
    only: frozenset[int] | None = None    # run just these cells (no resume)
    progress: bool = True
    timeout: float | None = None          # override [sweep] timeout
    retries: int | None = None            # override [sweep] retries
    cache: Path | None = None             # blob cache of generated models (default: blobs.default_cache_folder)


NOT_MADE = "model made when the sweep runs (--list runs no generator)"


def sweep_cells(spec: SweepSpec, cache: BlobCache | None = None, make_models: bool = True) -> list[Cell]:
    """Every cell of ``spec`` (steps 1-2); generator failures are kept in the cells.
    ``make_models=False`` (``--list``): no generator runs, their cells say :data:`NOT_MADE`."""
    cache = cache or BlobCache()
    models: list[tuple[Any, Blob | str]] = []
    for source in model_sources(spec):
        if source.generator is not None and not make_models:
            models.append((source, NOT_MADE))
            continue
        try:
            models.append((source, materialise(source, cache)))
        except GeneratorFailed as failure:
            assert source.generator is not None  # only a generator fails so
            models.append((source, f"generator {source.generator.callable}: {failure}"))
    return expand_cells(spec, models)


def sweep_identity(spec: SweepSpec, cells: list[Cell]) -> str:
    text = spec.name + "\n" + "\n".join(cell.config_hash for cell in cells)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _selected(cells: list[Cell], only: frozenset[int] | None) -> list[Cell]:
    if only is None:
        return cells
    unknown = sorted(index for index in only if not 0 <= index < len(cells))
    if unknown:
        raise UsageError(f"--cells {','.join(map(str, unknown))}: the sweep has {len(cells)} cells "
                         f"(0-{len(cells) - 1}; see --list)")
    return [cell for cell in cells if cell.index in only]


def _resumed(cells: list[Cell], recorder: CellRecorder | None, settings: SweepSettings) -> dict[int, CellResult]:
    if recorder is None or settings.only is not None:
        return {}
    finished = recorder.finished()
    results = {}
    for cell in cells:
        record = finished.get(cell.config_hash)
        if record is not None and (record.status == STATUS_OK or not settings.retry_failed):
            results[cell.index] = result_of_record(cell, record)
    return results


def _result(cell: Cell, outcome: dict[str, Any], attempts: int) -> CellResult:
    return CellResult(cell.index, outcome["status"], int(outcome["exit_code"]), outcome.get("error"),
                      dict(outcome.get("figures") or {}), list(outcome.get("warnings") or []),
                      float(outcome.get("seconds") or 0.0), outcome.get("worker"), attempts)


def _keep(result: CellResult, cell: Cell, payload, recorder, results, progress) -> None:
    if recorder is not None:
        result.run_id = recorder.record(cell, result, payload)
    results[cell.index] = result
    progress.finished(cell, result)


def run_sweep(spec: SweepSpec, settings: SweepSettings = SweepSettings()) -> SweepResult:
    """Run the sweep (module docstring) and return every selected cell's result."""
    started = time.perf_counter()
    cells = sweep_cells(spec, BlobCache(settings.cache))
    sweep_id = sweep_identity(spec, cells)
    selected = _selected(cells, settings.only)
    recorder = CellRecorder(settings.store, spec, sweep_id) if settings.store is not None else None
    try:
        results = _resumed(selected, recorder, settings)
        pending = [cell for cell in selected if cell.index not in results]
        with connect(settings.scheduler, settings.workers, settings.connect_timeout) as cluster:
            described = cluster.describe()
            with SweepProgress(spec.name, len(selected), len(results), settings.progress) as progress:
                for cell in (cell for cell in pending if cell.failure is not None):
                    _keep(CellResult(cell.index, STATUS_FAILED, GENERATOR_EXIT_CODE, cell.failure), cell, None,
                          recorder, results, progress)
                runnable = [cell for cell in pending if cell.failure is None]
                for cell, outcome, attempts in execute(
                        cluster, runnable, timeout=settings.timeout or spec.timeout,
                        retries=spec.retries if settings.retries is None else settings.retries,
                        progress=progress.running):
                    _keep(_result(cell, outcome, attempts), cell, outcome.get("payload"), recorder, results, progress)
    finally:
        if recorder is not None:
            recorder.close()
    return SweepResult(spec, sweep_id, selected, results, time.perf_counter() - started, described)
