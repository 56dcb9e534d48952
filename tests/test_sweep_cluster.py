"""The example sweep (24 cells: 4 shared models x 2 targets x 3 option sets, plan + estimate) on a
real Dask cluster - ``dask scheduler`` and two ``dask worker`` processes on localhost - with one
worker killed while it runs a cell: every cell still finishes, with the same figures as the
same sweep run in process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SHARED, shared_model
from mcudeploy.cli.main import main
from mcudeploy.runs import RunStore

EXAMPLE = REPO / "examples" / "sweep.toml"
TIMING = ("seconds", "run")        # columns that differ between two runs of the same cells
MOBILENET_CELLS = range(12, 18)    # the third model of the example: 2 targets x 3 option sets


class _Processes:
    """Processes started by the test, each in its own session: every group is killed at the end,
    whatever happened (a worker's cell process, in a session of its own, ends at the end of
    its input when its worker dies)."""

    def __init__(self, folder: Path):
        self.folder, self.started, self.logs = folder, [], []

    def start(self, arguments: list[str], name: str, **options) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        self.logs.append(log)
        options.setdefault("stdout", subprocess.DEVNULL)
        process = subprocess.Popen(arguments, stderr=log, start_new_session=True, **options)
        self.started.append(process)
        return process

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait(timeout=10)
        for log in self.logs:
            log.close()


def _address(scheduler_file: Path, deadline: float) -> str:
    while time.monotonic() < deadline:
        if scheduler_file.exists() and scheduler_file.stat().st_size:
            return json.loads(scheduler_file.read_text())["address"]
        time.sleep(0.1)
    raise TimeoutError("the dask scheduler did not start")


def _recorded(store: Path) -> int:
    if not store.exists():
        return 0
    with RunStore.open(store) as runs:
        return len(runs.list_runs(command="sweep-cell"))


def _busy_worker(client, pids: dict[str, int], cells: range, deadline: float) -> tuple[str, int]:
    """A worker executing one of ``cells`` right now (not merely holding it in its queue), and
    that cell's index."""
    def executing(dask_worker) -> list[str]:      # nested: sent to the workers by value
        return [str(task.key) for task in dask_worker.state.executing if str(task.key).startswith("mcudeploy-cell-")]

    while time.monotonic() < deadline:
        for worker, keys in client.run(executing).items():
            found = [int(key.split("-")[2]) for key in keys]
            if worker in pids and found and found[0] in cells:
                return worker, found[0]
        time.sleep(0.005)
    raise AssertionError(f"no worker was executing one of the cells {cells}")


def _rows(path: Path) -> list[dict]:
    cells = json.loads(path.read_text())["cells"]
    return [{key: value for key, value in row.items() if key not in TIMING} for row in cells]


@pytest.mark.slow
def test_kill_a_worker_midway_and_get_every_cell(tmp_path, run_store, monkeypatch):
    monkeypatch.setenv("MCUDEPLOY_SHARED", str(SHARED))
    shared_model("mlperf_tiny/resnet8_int8.tflite")
    from distributed import Client

    processes, client = _Processes(tmp_path), None
    scheduler_file = tmp_path / "scheduler.json"
    try:
        processes.start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard",
                         "--scheduler-file", str(scheduler_file)], "scheduler")
        address = _address(scheduler_file, time.monotonic() + 30)
        for index in range(2):
            processes.start([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                             "--no-nanny", "--no-dashboard", "--name", f"w{index}"], f"worker{index}")
        client = Client(address, timeout=20, set_as_default=False)
        client.wait_for_workers(2, timeout=30)
        pids = client.run(os.getpid)
        sweep = processes.start([sys.executable, "-m", "mcudeploy", "sweep", str(EXAMPLE), "--scheduler", address,
                                 "--connect-timeout", "20", "--no-progress", "--out", str(tmp_path / "cluster.json")],
                                "sweep", env=dict(os.environ, MCUDEPLOY_SHARED=str(SHARED)))
        deadline = time.monotonic() + 60
        while _recorded(run_store) < 6 and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.02)
        # a mobilenet cell (the example's slowest model: cells 12-17), so that it is still running when killed
        victim, lost_cell = _busy_worker(client, pids, MOBILENET_CELLS, time.monotonic() + 30)
        os.kill(pids[victim], signal.SIGKILL)
        killed_at = _recorded(run_store)
        assert sweep.wait(timeout=120) == 0, (tmp_path / "sweep.log").read_text()
    finally:
        if client is not None:
            client.close()
        processes.close()
    assert 6 <= killed_at < 24                                                 # midway: some done, some to do
    with RunStore.open(run_store) as runs:
        cells = runs.list_runs(command="sweep-cell")
    assert len(cells) == 24 and {run.status for run in cells} == {"ok"}
    assert len({run.tags["cell"] for run in cells}) == 24
    assert victim not in {run.tags["worker"] for run in cells[killed_at + 2:]}     # the survivor ran the rest
    lost = next(run for run in cells if run.tags["cell"] == str(lost_cell))
    assert lost.status == "ok" and lost.tags["worker"] != victim                # the cell in flight ran again
    assert main(["sweep", str(EXAMPLE), "--workers", "2", "--no-progress", "--no-record",
                 "--out", str(tmp_path / "local.json")]) == 0
    assert _rows(tmp_path / "cluster.json") == _rows(tmp_path / "local.json")
    print(f"killed worker {victim} while it ran cell {lost_cell}, after {killed_at} of 24 cells; attempts > 1: "
          f"{sum(run.tags['attempts'] != '1' for run in cells)}; workers: "
          f"{sorted({run.tags['worker'] for run in cells})}")
