"""Running cells on a Dask cluster: data by hash, a bounded window of tasks, retries, results as they come.

    for cell, outcome, attempts in execute(cluster, cells, timeout=60, retries=2, progress=...):
        ...      # outcome: the cell process's result (status ok | failed | timeout)

* **Data by hash.** Each file a cell reads is scattered once, keyed ``mcudeploy-blob-<sha256>``
  (:mod:`.blobs`), when the first cell that needs it is submitted, and released when the
  last one has finished; Dask copies it to a worker the first time that worker runs such a
  cell, and the worker keeps it (and writes it into its disk cache).
* **Window.** At most twice as many cells as the cluster has threads are submitted at a
  time, so the files in memory, and the work lost to an interrupt, stay small.
* **Timeouts** are enforced on the worker (the cell process is killed, :mod:`.cell_process`):
  the cell is ``timeout`` and not retried (it would hang again).
* **Retries.** A lost worker is Dask's to handle: its cells are rescheduled on the others.
  What reaches this loop - a crashed cell process, a cell whose file was lost with the only
  worker that held it (it is scattered again), Dask giving up on a cell that killed workers
  - is retried up to ``retries`` times, then recorded as failed with the last error. An
  error inside the cell (the user's input, a bug) is its result: never retried.
"""
from __future__ import annotations

import itertools
import logging
from collections import Counter, deque
from typing import Any, Callable, Iterator

from .blobs import Blob, blob_key
from .cell_process import failure
from .cells import Cell
from .cluster import Cluster
from .worker_task import run_cell_task

log = logging.getLogger(__name__)
WINDOW_PER_THREAD = 2
RETRIED = "crashed"
_submissions = itertools.count()


class _Blobs:
    """Scattered files: sha256 -> future, with the count of unfinished cells that need each."""

    def __init__(self, cluster: Cluster, cells: list[Cell]):
        self.client = cluster.client
        self.futures: dict[str, Any] = {}
        self.users = Counter(sha for cell in cells for sha in {b.sha256 for b in cell.blobs.values()})
        self.scatters: Counter[str] = Counter()

    def futures_for(self, cell: Cell) -> dict[str, Any]:
        found = {}
        for blob in {b.sha256: b for b in cell.blobs.values()}.values():
            if blob.sha256 not in self.futures:
                self.futures[blob.sha256] = self._scatter(blob)
            found[blob.sha256] = self.futures[blob.sha256]
        return found

    def _scatter(self, blob: Blob) -> Any:
        # A file scattered again gets a new key: the scheduler may still be forgetting the
        # lost key, and reusing it would let that release the new copy too (seen as the
        # retried cells being cancelled with "lost dependencies").
        again = self.scatters[blob.sha256]
        self.scatters[blob.sha256] += 1
        key = blob_key(blob.sha256) + (f"-{again}" if again else "")
        return self.client.scatter({key: blob.path.read_bytes()}, hash=False)[key]

    def forget_lost(self, cell: Cell) -> None:
        """Drop the futures of ``cell``'s files that the cluster lost (scattered again on next use)."""
        for blob in cell.blobs.values():
            future = self.futures.get(blob.sha256)
            if future is not None and future.status != "finished":
                del self.futures[blob.sha256]

    def release(self, cell: Cell) -> None:
        for sha in {b.sha256 for b in cell.blobs.values()}:
            self.users[sha] -= 1
            if self.users[sha] <= 0:
                self.futures.pop(sha, None)


def _outcome(future, result: Any) -> dict[str, Any]:
    """The task's result, or a ``crashed`` outcome for what went wrong around it (``result``
    is then the error: an exception, or Dask's ``(type, exception, traceback)``)."""
    if future.status == "finished":
        return result
    error = result[1] if isinstance(result, tuple) and len(result) == 3 else result
    # CancelledError (lost data), KilledWorker, CommClosedError, a cell process that did not start
    return failure(RETRIED, 1, f"the cluster lost the cell ({type(error).__name__}: {error})")


class _Loop:
    def __init__(self, cluster: Cluster, cells: list[Cell], timeout: float, retries: int):
        from distributed import as_completed

        self.cluster, self.timeout, self.retries = cluster, timeout, retries
        self.pending = deque((cell, 1) for cell in cells)
        self.blobs = _Blobs(cluster, cells)
        self.flying: dict[Any, tuple[Cell, int]] = {}
        self.completed = as_completed(loop=cluster.client.loop, with_results=True, raise_errors=False)
        self.window = WINDOW_PER_THREAD * cluster.threads()

    def fill(self) -> None:
        while self.pending and len(self.flying) < self.window:
            cell, attempt = self.pending.popleft()
            future = self.cluster.client.submit(
                run_cell_task, cell.request(), self.blobs.futures_for(cell), self.timeout, pure=False,
                key=f"mcudeploy-cell-{cell.index}-{attempt}-{next(_submissions)}")
            self.flying[future] = (cell, attempt)
            self.completed.add(future)

    def finish(self, future, result: Any) -> tuple[Cell, dict[str, Any], int] | None:
        """The cell's final outcome, or None when it was sent again."""
        cell, attempt = self.flying.pop(future)
        outcome = _outcome(future, result)
        if outcome["status"] == RETRIED:
            self.blobs.forget_lost(cell)
            if attempt <= self.retries:
                log.warning("cell %d: %s; attempt %d of %d", cell.index, outcome["error"], attempt + 1,
                            self.retries + 1)
                self.pending.appendleft((cell, attempt + 1))
                return None
            outcome["status"] = "failed"
        self.blobs.release(cell)
        return cell, outcome, attempt

    def cancel(self) -> None:
        if self.flying:
            self.cluster.client.cancel(list(self.flying))


def execute(cluster: Cluster, cells: list[Cell], *, timeout: float, retries: int,
            progress: Callable[[int], None] | None = None) -> Iterator[tuple[Cell, dict[str, Any], int]]:
    """Run ``cells`` on ``cluster``; yields ``(cell, outcome, attempts)`` as each one ends
    (module docstring). ``progress(running)`` is called whenever the number in flight changes."""
    if not cells:
        return
    loop = _Loop(cluster, cells, timeout, retries)
    try:
        loop.fill()
        while loop.flying:
            if progress is not None:
                progress(min(len(loop.flying), loop.window // WINDOW_PER_THREAD))
            future, result = next(loop.completed)
            done = loop.finish(future, result)
            loop.fill()
            if done is not None:
                yield done
    finally:
        loop.cancel()
