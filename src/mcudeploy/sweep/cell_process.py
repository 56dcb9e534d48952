"""The worker's side of a cell process (:mod:`.child`): start it, send a cell, wait at most the timeout.

    process = CellProcess(log_folder)
    result = process.run(request, paths, timeout=60.0)     # the child's result, or:
        {"status": "timeout", ...}   the cell ran longer than ``timeout``: the process is killed
        {"status": "crashed", ...}   the process died (a segfault, out of memory): retried by the client

The process is started on first use and kept for the next cells (its imports cost about a
second, a cell often less); after a timeout or a crash the next cell starts a new one. Its
standard error goes to a log file in ``log_folder``, whose end is quoted when it crashes. It
gets ``MCUDEPLOY_NO_RECORD=1`` (the client records), one BLAS / OpenMP thread unless the
environment says otherwise (the sweep is the parallelism), and this mcudeploy on its path.

The cell processes of an in-process LocalCluster's workers (``own_session``) each lead a
session of their own (``start_new_session``), as separately started ``dask worker`` processes
do. Linux's scheduler (autogroup, on by default) shares the CPU between sessions first: cell
processes left in the client's session shared that one session's share, so on a machine busy
with other sessions' work a second local worker added next to no CPU (the control of
``benchmarks/sweep_bench.py`` at load average 10 on 2 cores: 2 processes 0.99x and 1.13x as
fast as 1 in one session, 1.69x and 2.45x in two; on an idle machine it makes no
difference). A terminal's Ctrl-C then reaches the client only: the client kills its cell
processes before it closes the LocalCluster (:func:`.cluster.connect`), and a cell process
whose client died sees the end of its input after its cell and exits. The cell processes of
a ``dask worker`` stay in the worker's session, so a Ctrl-C there reaches them too.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

PACKAGE_ROOT = Path(__file__).resolve().parents[2]      # the folder that holds this mcudeploy
READY_TIMEOUT_S = 300.0
TIMEOUT_EXIT_CODE = 124         # as timeout(1)
CRASH_TAIL_BYTES = 1500
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def child_environment() -> dict[str, str]:
    environment = dict(os.environ, MCUDEPLOY_NO_RECORD="1")
    for name in THREAD_VARIABLES:
        environment.setdefault(name, "1")
    environment["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return environment


def failure(status: str, exit_code: int, error: str) -> dict[str, Any]:
    return {"status": status, "exit_code": exit_code, "error": error, "stage": None, "figures": {},
            "warnings": [], "payload": None, "seconds": 0.0}


class CellProcess:
    """One reusable cell process (module docstring)."""

    def __init__(self, log_folder: Path, own_session: bool = False):
        self.log_folder = Path(log_folder)
        self.own_session = own_session
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.log_path: Path | None = None

    def _start(self) -> None:
        self.log_folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.log_folder, prefix="cell-process-", suffix=".log")
        self.log_path = Path(name)
        with os.fdopen(handle, "w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "mcudeploy.sweep.child"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, env=child_environment(),
                                            text=True, encoding="utf-8",
                                            start_new_session=self.own_session)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process, self.lines), daemon=True).start()
        ready = self._next_line(READY_TIMEOUT_S)
        if not ready or not json.loads(ready).get("ready"):
            tail = self._tail()
            self.kill()
            raise RuntimeError(f"the cell process did not start: {tail}")

    @staticmethod
    def _read(process: subprocess.Popen, lines: queue.Queue) -> None:
        assert process.stdout is not None  # started with stdout=PIPE
        for line in process.stdout:
            lines.put(line)
        lines.put("")                      # end of output: the process ended

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _tail(self) -> str:
        try:
            data = self.log_path.read_bytes()[-CRASH_TAIL_BYTES:] if self.log_path else b""
        except OSError:
            data = b""
        return " ".join(data.decode("utf-8", "replace").split()) or "no output"

    def run(self, request: dict[str, Any], paths: dict[str, str], timeout: float) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self._start()
        assert self.process is not None and self.process.stdin is not None  # started, with stdin=PIPE
        try:
            self.process.stdin.write(json.dumps({"request": request, "paths": paths}) + "\n")
            self.process.stdin.flush()
        except OSError:
            return self._crashed()
        line = self._next_line(timeout)
        if line is None:
            self.kill()
            return failure("timeout", TIMEOUT_EXIT_CODE, f"timed out after {timeout:g} s (the cell process was "
                           "killed); raise [sweep] timeout if the cell needs longer")
        if not line:
            return self._crashed()
        return json.loads(line)

    def _crashed(self) -> dict[str, Any]:
        assert self.process is not None  # called while a request runs
        code = self.process.wait()
        cause = f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() else \
            f"exit code {code}"
        text = f"the cell process died ({cause}): {self._tail()}"
        self.kill()
        return failure("crashed", 1, text)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
        self._remove_log()

    def _remove_log(self) -> None:
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def close(self) -> None:
        """End the process (end of input), and remove its log."""
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None  # started with stdin=PIPE
            self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None
        self._remove_log()
