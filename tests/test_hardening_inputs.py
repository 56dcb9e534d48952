"""The bounded reader of text / TOML / JSON inputs (issue 26, findings 14 and 18).

Every input file a command reads goes through :mod:`mcudeploy.text_inputs`: a FIFO, a
device, a folder, a huge or a too deeply nested file is one error line naming the option and
the file, never a block, a ``MemoryError`` or a ``RecursionError``.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from mcudeploy.codegen.output_dir import our_files
from mcudeploy.errors import McuDeployError
from mcudeploy.estimate.overlay import load_overlay
from mcudeploy.options import load_options
from mcudeploy.search.space import load_space_file
from mcudeploy.sweep import load_sweep
from mcudeploy.targets.memory_pools import load_memory_pools
from mcudeploy.workflow import load_project
from mcudeploy.workflow.records import DeployState

READERS = {
    "--config": load_options,
    "--memory-pools": load_memory_pools,
    "--overlay": load_overlay,
    "--space": load_space_file,
    "sweep file": load_sweep,
    "project file": load_project,
}
RETURN_WITHIN_S = 10.0
MAX_TEXT_BYTES = 16 << 20         # mcudeploy.text_inputs (imported in the tests: a test fails, not collection)
MAX_NESTING = 64


def _outcome(function, path: Path) -> BaseException | None:
    """What ``function(path)`` raised (None: it returned), failing the test if it blocks; a
    reader blocked on a FIFO is released by opening the FIFO's other end."""
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            function(path)
            outcome.append(None)
        except BaseException as error:       # noqa: BLE001 - the test judges what came out
            outcome.append(error)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(RETURN_WITHIN_S)
    if worker.is_alive():
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK) if path.exists() else None
        if descriptor is not None:
            os.close(descriptor)
        worker.join(RETURN_WITHIN_S)
        pytest.fail(f"{function.__qualname__}({path}) blocked")
    return outcome[0]


@pytest.mark.parametrize("option", list(READERS))
def test_a_fifo_is_refused_without_blocking(tmp_path, option):
    fifo = tmp_path / "input.toml"
    os.mkfifo(fifo)
    error = _outcome(READERS[option], fifo)
    assert isinstance(error, McuDeployError), repr(error)
    assert "FIFO" in str(error) and str(fifo) in str(error) and "\n" not in str(error)


@pytest.mark.parametrize("option", list(READERS))
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_before_it_is_read(option, device):
    error = _outcome(READERS[option], Path(device))
    assert isinstance(error, McuDeployError), repr(error)
    assert "character device" in str(error) and device in str(error)


def test_a_folder_and_a_huge_file_are_refused(tmp_path):
    from mcudeploy.text_inputs import read_text

    with pytest.raises(McuDeployError, match="is a folder"):
        read_text(tmp_path, "--config")
    huge = tmp_path / "huge.toml"
    with open(huge, "wb") as stream:
        stream.truncate(MAX_TEXT_BYTES + 1)          # sparse: no disk used
    with pytest.raises(McuDeployError, match=r"--config .*huge.toml: 16,777,217 bytes, more than"):
        load_options(huge)


DEEP_TOML = {
    "arrays": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "inline tables": "x = " + "{a=" * 3000 + "1" + "}" * 3000 + "\n",
    "dotted keys": "[" + ".".join(["a"] * (MAX_NESTING + 10)) + "]\nb = 1\n",
}


@pytest.mark.parametrize("shape", list(DEEP_TOML))
@pytest.mark.parametrize("option", ["--overlay", "--space", "--config", "sweep file", "project file"])
def test_deeply_nested_toml_is_one_error_line(tmp_path, option, shape):
    path = tmp_path / "deep.toml"
    path.write_text(DEEP_TOML[shape])
    error = _outcome(READERS[option], path)
    assert isinstance(error, McuDeployError), repr(error)
    assert "nested" in str(error) and str(path) in str(error)


def test_deeply_nested_deploy_state_and_manifest(tmp_path):
    deep = "[" * 100000 + "]" * 100000
    state = tmp_path / "deploy.json"
    state.write_text(deep)
    error = _outcome(DeployState.read, state)
    assert isinstance(error, McuDeployError) and "nested" in str(error), repr(error)
    (tmp_path / ".mcudeploy-manifest.json").write_text(json.dumps({"files": {}})[:-1] + ', "x": ' + deep + "}")
    error = _outcome(our_files, tmp_path)
    assert isinstance(error, McuDeployError) and "manifest" in str(error), repr(error)


def test_a_fifo_deploy_state_is_refused(tmp_path):
    state = tmp_path / "deploy.json"
    os.mkfifo(state)
    error = _outcome(DeployState.read, state)
    assert isinstance(error, McuDeployError) and "FIFO" in str(error), repr(error)
