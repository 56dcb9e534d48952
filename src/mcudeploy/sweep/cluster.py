"""The Dask cluster a sweep runs on: an in-process ``LocalCluster``, or an existing scheduler.

    with connect(scheduler=None, workers=None, connect_timeout=5.0) as cluster:
        cluster.client, cluster.threads(), cluster.describe()

``scheduler=None``: a ``LocalCluster`` inside this process (``processes=False``) with
``workers`` workers of one thread each (default: one per core); the cells themselves run in
cell processes (:mod:`.cell_process`), so the workers being threads costs no parallelism.
``scheduler="tcp://HOST:8786"``: the cluster that scheduler serves (started with ``dask
scheduler`` and ``dask worker tcp://HOST:8786``; the workers need this mcudeploy version).

Problems are one :class:`~mcudeploy.errors.UsageError` before any cell runs: a scheduler that
does not answer within ``connect_timeout`` seconds, a cluster without workers after that
long, workers with another mcudeploy version. Dask's own log messages are kept at ERROR
while the sweep runs (``-vv`` shows them).
"""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from .. import __version__
from ..errors import UsageError
from .worker_task import close_cell_processes, worker_info

log = logging.getLogger(__name__)
DASK_LOGGERS = ("distributed", "tornado")


@dataclass
class Cluster:
    client: Any
    local: Any = None               # the LocalCluster, when this process started one
    address: str = ""

    def threads(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def describe(self) -> str:
        workers = len(self.client.nthreads())
        where = "in-process LocalCluster" if self.local is not None else f"Dask scheduler {self.address}"
        return f"{where}, {workers} worker(s), {self.threads()} thread(s)"


def _import_distributed():
    try:
        import distributed
    except ImportError as error:
        raise UsageError(f"mcudeploy sweep needs dask.distributed ({error}); install it with "
                         "python -m pip install \"dask[distributed]\"") from None
    return distributed


@contextmanager
def _quiet_dask() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in DASK_LOGGERS]
    levels = [logger.level for logger in loggers]
    if not log.isEnabledFor(logging.DEBUG):
        for logger in loggers:
            logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _remote(distributed, address: str, timeout: float) -> Cluster:
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as error:     # OSError, TimeoutError, ValueError (a malformed address), ...
        raise UsageError(f"--scheduler {address}: cannot reach the Dask scheduler ({type(error).__name__}: "
                         f"{error}); check the address and that 'dask scheduler' runs there, or leave out "
                         "--scheduler to run on this machine") from None
    cluster = Cluster(client, address=address)
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        client.close()
        raise UsageError(f"--scheduler {address}: the scheduler has no workers (waited {timeout:g} s); start "
                         f"some with 'dask worker {address}'") from None
    _check_versions(cluster)
    return cluster


def _check_versions(cluster: Cluster) -> None:
    try:
        found = cluster.client.run(worker_info)
    except Exception as error:      # the worker cannot import mcudeploy (or died meanwhile)
        cluster.client.close()
        raise UsageError(f"--scheduler {cluster.address}: the workers cannot run mcudeploy ({type(error).__name__}: "
                         f"{error}); install this mcudeploy ({__version__}) on every worker") from None
    other = {address: info["version"] for address, info in found.items() if info["version"] != __version__}
    if other:
        cluster.client.close()
        raise UsageError(f"--scheduler {cluster.address}: worker(s) {', '.join(sorted(other))} run mcudeploy "
                         f"{', '.join(sorted(set(other.values())))}, this client {__version__}; install the same "
                         "version on every worker")


def _local(distributed, workers: int | None) -> Cluster:
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        raise UsageError(f"--workers {count}: give at least one worker")
    local = distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=False,
                                     dashboard_address=None, silence_logs=logging.ERROR)
    return Cluster(distributed.Client(local, set_as_default=False), local=local, address=local.scheduler_address)


@contextmanager
def connect(scheduler: str | None = None, workers: int | None = None,
            connect_timeout: float = 5.0) -> Iterator[Cluster]:
    """The cluster of the module docstring, closed when the block ends."""
    distributed = _import_distributed()
    if scheduler is not None and workers is not None:
        raise UsageError("--workers starts local workers; with --scheduler the cluster's own workers run the "
                         "cells: give one of the two")
    with _quiet_dask():
        cluster = _remote(distributed, scheduler, connect_timeout) if scheduler else _local(distributed, workers)
        try:
            yield cluster
        finally:
            _close(cluster)


def _close(cluster: Cluster) -> None:
    if cluster.local is None:
        try:                          # the workers stay up; their cell processes need not
            cluster.client.run(close_cell_processes)
        except Exception as error:    # a worker already gone: nothing to close there
            log.debug("closing the workers' cell processes: %s", error)
    cluster.client.close()
    if cluster.local is not None:
        cluster.local.close()
        close_cell_processes()
