"""What a Dask worker runs for one cell: its files from the blob cache, then the cell in a cell process.

    client.submit(run_cell_task, request, {sha256: blob_future, ...}, timeout)

Dask hands the task the bytes of every blob the cell names (scattered once by the client,
fetched once per worker and kept in the worker's memory while cells need them); the task
writes each into the machine's blob cache if it is not there (:mod:`.blobs`) and passes the
cell, with the local paths, to this thread's cell process (:mod:`.cell_process`), started on
first use and kept. The result is the cell process's, plus the worker's address.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any

from .. import __version__
from .blobs import BlobCache
from .cell_process import CellProcess

_local = threading.local()
_processes: list[CellProcess] = []
_lock = threading.Lock()
_own_sessions = [False]       # set by the client for its in-process LocalCluster (:func:`own_sessions`)


def own_sessions(enabled: bool) -> None:
    """Whether the cell processes started from now on lead sessions of their own: for the
    workers of an in-process LocalCluster, which all share the client's session (a ``dask
    worker`` has its own; its cell processes stay in it). :mod:`.cell_process` says why."""
    _own_sessions[0] = enabled


def _cell_process(cache: BlobCache) -> CellProcess:
    process = getattr(_local, "process", None)
    with _lock:
        if process is None or process not in _processes:     # first use, or closed since
            process = _local.process = CellProcess(cache.folder / "logs", own_session=_own_sessions[0])
            _processes.append(process)
    return process


def close_cell_processes(kill: bool = False) -> None:
    """End every cell process this Python process started (the end of an in-process sweep);
    ``kill``: at once, a running cell too (an interrupted sweep)."""
    with _lock:
        processes, _processes[:] = list(_processes), []
    for process in processes:
        if kill:
            process.kill()
        else:
            process.close()


atexit.register(close_cell_processes)


def worker_address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def run_cell_task(request: dict[str, Any], blobs: dict[str, bytes], timeout: float) -> dict[str, Any]:
    """One cell on this worker (module docstring)."""
    cache = BlobCache()
    paths = {role: str(cache.ensure(sha256, name, blobs[sha256])) for role, (sha256, name) in request["blobs"].items()}
    result = _cell_process(cache).run(request, paths, timeout)
    result["worker"] = worker_address()
    return result


def worker_info() -> dict[str, Any]:
    """The mcudeploy version of a worker (checked against the client's before a sweep)."""
    return {"version": __version__, "address": worker_address()}
