"""Long commands show progress: a spinner or bar on a terminal (standard error a TTY), nothing
when piped, and with -v an INFO line at the start and the end of each long step, with its
duration. Checked on a real command that runs for seconds (the generated code of ResNet-8
built and run on the host)."""
from __future__ import annotations

import logging
import os
import pty
import select
import subprocess
import sys

import pytest

from conftest import REPO, shared_model
from mcudeploy.progress import phase, progress_bar

ESC = "\x1b"


def command() -> list[str]:
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    return [sys.executable, "-m", "mcudeploy", "validate", str(model), "--on", "host", "--samples", "1"]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), "MCUDEPLOY_NO_RECORD": "1",
            "COLUMNS": "120", "TERM": "xterm"}


def run_on_terminal(arguments: list[str]) -> str:
    """Standard error on a pseudo-terminal; what the terminal received."""
    master, slave = pty.openpty()
    process = subprocess.Popen(arguments, stdout=subprocess.DEVNULL, stderr=slave, env=environment())
    os.close(slave)
    received = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:   # the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    assert process.wait(timeout=120) == 0
    return received.decode("utf-8", "replace")


@pytest.mark.slow
def test_long_command_shows_progress_on_a_terminal_and_nothing_when_piped():
    shown = run_on_terminal(command())
    assert "generating and compiling the code on the host" in shown
    assert ESC in shown   # drawn by rich, then erased (transient)
    piped = subprocess.run(command(), capture_output=True, text=True, env=environment(), timeout=300)
    assert piped.returncode == 0
    assert ESC not in piped.stderr and "generating and compiling" not in piped.stderr
    verbose = subprocess.run([*command()[:3], "-v", *command()[3:]], capture_output=True, text=True,
                             env=environment(), timeout=300)
    assert "generating and compiling the code on the host ..." in verbose.stderr
    assert "generating and compiling the code on the host: done in" in verbose.stderr
    assert ESC not in verbose.stderr


def test_phase_logs_start_and_end_and_nests_without_a_second_display(caplog):
    caplog.set_level(logging.INFO, logger="mcudeploy.progress")
    with phase("outer"):
        with progress_bar("inner", 3) as advance:
            advance()
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "outer ..." and messages[1] == "inner (3 samples) ..."
    assert messages[2].startswith("inner (3 samples): done in") and messages[3].startswith("outer: done in")
