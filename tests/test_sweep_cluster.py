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


def _start(arguments: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=open(log, "w"), start_new_session=True)


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


def _busy_worker(client, pids: dict[str, int]) -> tuple[str, int]:
    """A worker running a cell right now (it will be killed), and that cell's index."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for worker, keys in client.processing().items():
            cells = [key for key in keys if str(key).startswith("mcudeploy-cell-")]
            if cells and worker in pids:
                return worker, int(str(cells[0]).split("-")[2])
        time.sleep(0.01)
    raise AssertionError("no worker was running a cell")


def _rows(path: Path) -> list[dict]:
    return [{key: value for key, value in row.items() if key not in TIMING} for row in json.loads(path.read_text())["cells"]]


@pytest.mark.slow
def test_kill_a_worker_midway_and_get_every_cell(tmp_path, run_store, monkeypatch):
    monkeypatch.setenv("MCUDEPLOY_SHARED", str(SHARED))
    shared_model("mlperf_tiny/resnet8_int8.tflite")
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler_file = tmp_path / "scheduler.json"
    processes = [_start([*dask, "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                        tmp_path / "scheduler.log")]
    try:
        address = _address(scheduler_file, time.monotonic() + 30)
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
                  "--no-dashboard"]
        workers = [_start([*worker, "--name", f"w{i}"], tmp_path / f"worker{i}.log") for i in range(2)]
        processes += workers
        from distributed import Client
        client = Client(address, timeout=20, set_as_default=False)
        client.wait_for_workers(2, timeout=30)
        pids = client.run(os.getpid)
        environment = dict(os.environ, MCUDEPLOY_SHARED=str(SHARED))
        sweep = subprocess.Popen([sys.executable, "-m", "mcudeploy", "sweep", str(EXAMPLE), "--scheduler", address,
                                  "--connect-timeout", "20", "--no-progress", "--out", str(tmp_path / "cluster.json")],
                                 env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while _recorded(run_store) < 6 and time.monotonic() < deadline and sweep.poll() is None:
            time.sleep(0.02)
        victim, lost_cell = _busy_worker(client, pids)
        os.kill(pids[victim], signal.SIGKILL)
        killed_at = _recorded(run_store)
        client.close()
        output, errors = sweep.communicate(timeout=120)
        assert sweep.returncode == 0, errors
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert 6 <= killed_at < 24
    with RunStore.open(run_store) as runs:
        cells = runs.list_runs(command="sweep-cell")
    assert len(cells) == 24 and {run.status for run in cells} == {"ok"}
    assert victim not in {run.tags["worker"] for run in cells[killed_at + 2:]}     # the survivor ran the rest
    lost = next(run for run in cells if run.tags["cell"] == str(lost_cell))
    assert lost.status == "ok" and lost.tags["worker"] != victim                # the cell in flight ran again
    assert main(["sweep", str(EXAMPLE), "--workers", "2", "--no-progress", "--no-record",
                 "--out", str(tmp_path / "local.json")]) == 0
    assert _rows(tmp_path / "cluster.json") == _rows(tmp_path / "local.json")
    print(f"killed worker {victim} while it ran cell {lost_cell}, after {killed_at} of 24 cells; attempts > 1: "
          f"{sum(run.tags['attempts'] != '1' for run in cells)}; workers: "
          f"{sorted({run.tags['worker'] for run in cells})}")
