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
long, workers with another mcudeploy version. The address is probed before a Dask client
is made (:func:`_probe`): a malformed address, an unknown host or a refused connection is
said at once (Dask's own connect retries a refused port until the timeout), something that
answers but does not speak Dask's protocol is said too; a client whose start failed would
otherwise wait another 10 s when Python collects it. Dask's own log messages are kept at
ERROR while the sweep runs (``-vv`` shows them).
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from .. import __version__
from ..errors import UsageError
from ..extras import require
from .worker_task import close_cell_processes, own_sessions, worker_info

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
    return require("distributed", "sweep", "mcudeploy sweep")


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


def _unreachable(address: str, cause: str) -> UsageError:
    return UsageError(f"--scheduler {address}: cannot reach the Dask scheduler ({cause}); check the address and "
                      "that 'dask scheduler' runs there, or leave out --scheduler to run on this machine")


async def _handshake(address: str, timeout: float) -> None:
    """Dask's connect and handshake, the whole of it within ``timeout``: ``connect``'s own
    timeout covers opening the socket, not the handshake read, so a port that accepts and
    never answers would wait forever."""
    from distributed.comm import connect as open_comm

    async def exchange() -> None:
        comm = await open_comm(address, timeout=timeout)
        await comm.close()

    try:
        await asyncio.wait_for(exchange(), timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"no handshake in {timeout:g} s") from None


def _probe(address: str, timeout: float) -> None:
    """A plain TCP connection, then Dask's handshake (``tcp://`` only), within ``timeout`` each
    (module docstring)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except ValueError as error:
        raise _unreachable(address, f"not an address: {error}; write tcp://HOST:8786") from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except socket.gaierror as error:
        raise _unreachable(address, f"unknown host {host!r}: {error.strerror}") from None
    except ConnectionRefusedError:
        raise _unreachable(address, f"connection refused: nothing listens on port {port} of {host}") from None
    except OSError as error:          # TimeoutError (no answer within the timeout), no route, ...
        raise _unreachable(address, f"{type(error).__name__}: {error or f'no answer in {timeout:g} s'}") from None
    if scheme != "tcp":
        return                        # tls:// and others need the cluster's security settings: the client checks
    with ThreadPoolExecutor(1) as thread:      # its own event loop, whatever loop the caller runs
        try:
            thread.submit(asyncio.run, _handshake(address, timeout)).result()
        except Exception as error:    # garbage read as a frame length (MemoryError), a closed stream, ...
            raise _unreachable(address, f"{host}:{port} answers but not as a Dask scheduler ("
                               f"{type(error).__name__}: {str(error)[:120]})") from None


def _remote(distributed, address: str, timeout: float) -> Cluster:
    _probe(address, timeout)
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as error:     # the scheduler went away since the probe, ...
        raise _unreachable(address, f"{type(error).__name__}: {error}") from None
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
    # no dashboard; the scheduler's HTTP server (always started) on a free port, not 8787 (another
    # cluster's, with a warning)
    local = distributed.LocalCluster(n_workers=count, threads_per_worker=1, processes=False,
                                     dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                                     silence_logs=logging.ERROR)
    own_sessions(True)                # the cell processes of these in-process workers: see cell_process
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
        except BaseException:         # Ctrl-C, an error: the running cells are killed, not waited for
            _close(cluster, kill=True)
            raise
        _close(cluster)


def _close(cluster: Cluster, kill: bool = False) -> None:
    if cluster.local is None:
        try:                          # the workers stay up; their cell processes need not
            cluster.client.run(close_cell_processes)
        except Exception as error:    # a worker already gone: nothing to close there
            log.debug("closing the workers' cell processes: %s", error)
        cluster.client.close()
        return
    # first the cell processes: a worker thread waiting for a running cell's answer would
    # keep the LocalCluster's close (and Python's exit) waiting until the cell's timeout
    close_cell_processes(kill=kill)
    own_sessions(False)
    cluster.client.close()
    cluster.local.close()
