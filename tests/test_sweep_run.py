"""Sweeps run end to end on an in-process Dask LocalCluster: results in the run store, resume,
a hanging cell killed at its timeout, a failing cell that does not stop the sweep, the
outputs (JSON, CSV, Pareto PNG, HTML), and a scheduler that cannot be reached."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import MODELS, shared_model
from mcudeploy.cli.main import main
from mcudeploy.runs import RunStore

PLUGINS = '''
import os
import time
from pathlib import Path

def plugin(context):
    """A plugin stage: hangs for the option set "hang" (its process id in $HANG_PID_FILE), raises
    for "boom", else one metric."""
    name = context.parameters["option_set"]
    if name == "hang":
        if os.environ.get("HANG_PID_FILE"):
            Path(os.environ["HANG_PID_FILE"]).write_text(str(os.getpid()))
        time.sleep(3600)
    if name == "boom":
        raise RuntimeError("the plugin broke")
    return {"arena_kib": context.metrics["arena_bytes"] / 1024}
'''


def _sweep(folder: Path, option_sets: str, timeout: float = 60) -> Path:
    shared_model("mlperf_tiny/dscnn_kws_int8.tflite")
    (folder / "plugins.py").write_text(PLUGINS)
    path = folder / "sweep.toml"
    path.write_text(f'''[sweep]
name = "test"
stages = ["plan", "plugins.py:plugin"]
timeout = {timeout}
models_root = "{MODELS}"
[axes]
models = ["mlperf_tiny/dscnn_kws_int8.tflite"]
targets = ["stm32h743"]
option_sets = [{option_sets}]
''')
    return path


# The hanging cell's timeout. A cell's first run in a fresh cell process (the model read, the
# planner's imports) takes about 1.3 s on an idle machine, and each timeout kills the process so
# the next cell pays it again: at 2 s, under pytest-xdist's second worker and other load (load
# average 3.5 on 2 cores), every cell timed out. 8 s keeps six times that margin.
HANG_TIMEOUT_S = 8


def _cells(store: Path) -> list:
    with RunStore.open(store) as runs:
        return runs.list_runs(command="sweep-cell")


@pytest.mark.slow
def test_timeout_failure_and_resume(tmp_path, run_store, capsys, monkeypatch):
    monkeypatch.setenv("HANG_PID_FILE", str(tmp_path / "hang.pid"))
    path = _sweep(tmp_path, '{name = "default"}, {name = "hang"}, {name = "boom"}, {name = "no-reuse", reuse = false}',
                  timeout=HANG_TIMEOUT_S)
    code = main(["sweep", str(path), "--workers", "2", "--no-progress", "--out", str(tmp_path / "out.json")])
    assert code == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("mcudeploy: error: sweep test: 2 of 4 cells did not finish ok (1 timed out")
    cells = {row["option_set"]: row for row in json.loads((tmp_path / "out.json").read_text())["cells"]}
    assert cells["hang"]["status"] == "timeout" and f"timed out after {HANG_TIMEOUT_S} s" in cells["hang"]["error"]
    with pytest.raises(ProcessLookupError):          # the hanging cell's process was killed (and reaped)
        os.kill(int((tmp_path / "hang.pid").read_text()), 0)
    assert cells["boom"]["status"] == "failed" and "RuntimeError: the plugin broke" in cells["boom"]["error"]
    assert cells["default"]["status"] == "ok" and cells["default"]["arena_bytes"] < cells["no-reuse"]["arena_bytes"]
    runs = {run.tags["cell"]: run for run in _cells(run_store)}
    assert {run.status for run in runs.values()} == {"ok", "failed"} and len(runs) == 4
    assert runs["1"].exit_code == 124 and runs["1"].tags["outcome"] == "timeout"
    assert runs["0"].figures["arena_kib"] == pytest.approx(runs["0"].figures["arena_bytes"] / 1024)
    # the same command again: every cell is recorded, nothing runs
    assert main(["sweep", str(path), "--no-progress", "--out", str(tmp_path / "again.json")]) == 1
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["sweep"]["counts"]["resumed"] == 4 and len(_cells(run_store)) == 4
    assert [row["arena_bytes"] for row in again["cells"]] == [cells[n]["arena_bytes"] for n in
                                                              ("default", "hang", "boom", "no-reuse")]
    # --retry-failed runs the two that did not finish ok, and only those
    main(["sweep", str(path), "--no-progress", "--retry-failed", "--timeout", str(HANG_TIMEOUT_S)])
    assert len(_cells(run_store)) == 6


@pytest.mark.slow
def test_outputs_and_an_interrupted_sweep_resumes(tmp_path, run_store):
    path = _sweep(tmp_path, '{name = "default"}, {name = "no-reuse", reuse = false}, {name = "file", schedule = "file"}')
    assert main(["sweep", str(path), "--workers", "1", "--no-progress", "--cells", "0"]) == 0
    assert len(_cells(run_store)) == 1              # as if interrupted after the first cell
    out, csv, png, html = (tmp_path / name for name in ("r.json", "r.csv", "p.png", "r.html"))
    assert main(["sweep", str(path), "--workers", "1", "--no-progress", "--out", str(out), "--csv", str(csv),
                 "--png", str(png), "--html", str(html)]) == 0
    document = json.loads(out.read_text())
    assert document["sweep"]["counts"] == {"ok": 3, "failed": 0, "timeout": 0, "resumed": 1}
    assert len(_cells(run_store)) == 3 and len({run.config_hash for run in _cells(run_store)}) == 3
    assert document["pareto"]["not_measured"] == ["latency", "accuracy"]
    assert csv.read_text().splitlines()[0].startswith("cell,model,target,input_shapes,quantization,objective,option_set")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Sweep: Pareto front" in html.read_text()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def _not_dask() -> Iterator[str]:
    """A port that accepts connections and answers as a web server would, not as Dask."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = server.accept()
                with connection:
                    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("address, message", [      # (no unknown-host case: without DNS a lookup can be slow)
    ("closed", "connection refused: nothing listens on port"),
    ("tcp//127.0.0.1", "not an address: missing port number"),
    ("not-dask", "answers but not as a Dask scheduler"),
])
def test_unreachable_scheduler_is_one_error_and_records_nothing(tmp_path, run_store, capsys, address, message):
    """With the default --connect-timeout (5 s): one clear error, no cell recorded."""
    path = _sweep(tmp_path, '{name = "default"}')
    with _not_dask() as not_dask:
        address = {"closed": f"tcp://127.0.0.1:{_closed_port()}", "not-dask": not_dask}.get(address, address)
        code = main(["sweep", str(path), "--scheduler", address])
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0] and message in lines[0], lines
    assert _cells(run_store) == []
    with RunStore.open(run_store) as runs:        # the sweep command's own run: failed, exit 2
        assert [(run.status, run.exit_code) for run in runs.list_runs(command="sweep")] == [("failed", 2)]


CRASH_ONCE = '''
import os, signal
from pathlib import Path

def crash_once(context):
    """Kills its own cell process the first time (a segfault, an out-of-memory kill), then works."""
    marker = Path({marker!r})
    if not marker.exists():
        marker.write_text("crashed")
        os.kill(os.getpid(), signal.SIGKILL)
    return {{"survived": 1}}
'''


@pytest.mark.slow
def test_a_crashed_cell_process_is_retried(tmp_path, run_store):
    path = _sweep(tmp_path, '{name = "default"}')
    (tmp_path / "crash.py").write_text(CRASH_ONCE.format(marker=str(tmp_path / "marker")))
    path.write_text(path.read_text().replace('"plugins.py:plugin"', '"crash.py:crash_once"'))
    assert main(["sweep", str(path), "--workers", "1", "--no-progress"]) == 0
    [run] = _cells(run_store)
    assert run.status == "ok" and run.tags["attempts"] == "2" and run.figures["survived"] == 1


@pytest.mark.slow
def test_files_the_cluster_lost_are_scattered_again(tmp_path):
    from distributed import Future

    from mcudeploy.sweep import load_sweep
    from mcudeploy.sweep.blobs import blob_key
    from mcudeploy.sweep.cluster import connect
    from mcudeploy.sweep.executor import execute
    from mcudeploy.sweep.run import sweep_cells

    cells = sweep_cells(load_sweep(_sweep(tmp_path, '{name = "a"}, {name = "b", reuse = false}')))
    with connect(workers=1) as cluster:
        lost = []

        def lose_the_model(running: int) -> None:     # as if the only worker holding it had died
            if not lost:
                lost.append(Future(blob_key(cells[0].blobs["model"].sha256), cluster.client).cancel())

        outcomes = list(execute(cluster, cells, timeout=60, retries=2, progress=lose_the_model))
    assert sorted((cell.index, outcome["status"]) for cell, outcome, _ in outcomes) == [(0, "ok"), (1, "ok")]
    assert max(attempts for _, _, attempts in outcomes) == 2


@pytest.mark.slow
def test_ctrl_c_ends_the_sweep_and_its_running_cell(tmp_path, run_store):
    """A terminal's Ctrl-C (SIGINT to the foreground process group) while a cell hangs: the client
    stops at once and kills the cell process, which sits in a session of its own."""
    path = _sweep(tmp_path, '{name = "hang"}', timeout=600)
    pid_file = tmp_path / "hang.pid"
    sweep = subprocess.Popen([sys.executable, "-m", "mcudeploy", "sweep", str(path), "--workers", "1",
                              "--no-progress"], env=dict(os.environ, HANG_PID_FILE=str(pid_file)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        cell_process = int(pid_file.read_text())
        assert os.getsid(cell_process) == cell_process != os.getsid(sweep.pid)     # its own session
        os.killpg(sweep.pid, signal.SIGINT)
        assert sweep.wait(timeout=15) == 130      # the timeout only guards against a hang
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
            sweep.wait()
    assert "sweep interrupted" in sweep.stderr.read()
    with pytest.raises(ProcessLookupError):
        os.kill(cell_process, 0)
