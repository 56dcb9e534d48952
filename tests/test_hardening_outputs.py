"""Issue 26, the output half (findings 1, 6, 7, 8, 9, 12 (``runs export``), 16, 17, 19
(``runs export --csv FOLDER``)): one output-path guard for every command that writes, and a
run store that is never made out of a file that is not one. Each test fails without the fix:
a user file replaced, a file created where none was asked for, or a traceback."""
from __future__ import annotations

import hashlib
import os
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from fuzz_models import onnx_conv_net
from mcudeploy.cli import recording
from mcudeploy.cli.main import main
from mcudeploy.runs import RunStore
from mcudeploy.workflow import load_project
from onnx_builders import save

LONG = "x" * 300          # longer than the 255 bytes of every common file system's name limit


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(recording, "_store_warning_given", False)   # warned once per process
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    save(onnx_conv_net(random.Random(0)), tmp_path, "m.onnx")
    return tmp_path


@pytest.fixture
def store(workspace) -> Path:
    """A run store with one recorded run whose model path holds an escape sequence."""
    path = workspace / "runs.sqlite"
    with RunStore.open(path) as opened:
        with opened.record("plan", ["plan", "m.onnx"], config={"a": 1}, model=Path("\x1b]0;pwned\x07m.onnx")) as run:
            run.figure("arena_bytes", 100)
    return path


def _identity(path: Path) -> tuple[int, int] | None:
    """Inode and modification time, or None: a file created or rewritten changes it."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


def _one_error(capsys, argv: list[str], words: str, code: int = 2) -> str:
    assert main(argv) == code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(lines) == 1 and words in lines[0], lines
    return lines[0]


# -- 1: an output that is the run store ------------------------------------------------------

@pytest.mark.parametrize("argv", [["runs", "export", "--csv", "{store}", "--runs", "{store}"],
                                  ["report", "last", "-o", "{store}", "--runs", "{store}"]])
def test_an_output_that_is_the_run_store_is_refused(store, capsys, argv):
    before = _digest(store)
    _one_error(capsys, [a.format(store=store) for a in argv], "would replace")
    assert _digest(store) == before
    with RunStore.open(store) as opened:
        assert len(opened.list_runs()) == 1


def test_a_recorded_command_never_writes_over_the_run_store(store, capsys, monkeypatch):
    before = _digest(store)
    _one_error(capsys, ["analyze", "m.onnx", "--json", str(store), "--runs", str(store)], "run store")
    monkeypatch.setenv("MCUDEPLOY_RUNS", str(store))
    _one_error(capsys, ["analyze", "m.onnx", "--json", str(store)], "run store")
    assert _digest(store) == before


# -- 12 (runs export) and 19 (runs export --csv FOLDER) --------------------------------------

def test_runs_export_to_stdout_prints_no_escape_sequence(store, capsys):
    assert main(["runs", "export", "--csv", "-", "--runs", str(store)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "pwned" in out


def test_runs_export_into_a_folder_is_one_line(store, capsys):
    (store.parent / "afolder").mkdir()
    _one_error(capsys, ["runs", "export", "--csv", str(store.parent / "afolder"), "--runs", str(store)], "folder")


# -- 6: the search log's sidecar -------------------------------------------------------------

def test_search_log_never_overwrites_a_user_file_named_like_its_sidecar(workspace, capsys):
    user = workspace / "trials.txt.jsonl"
    user.write_text("my notes\n")
    _one_error(capsys, ["search", "m.onnx", "--target", "stm32h743", "--budget", "1", "--log", "trials.txt"],
               "trials.txt.jsonl")
    assert user.read_text() == "my notes\n" and not (workspace / "trials.txt").exists()


def test_search_log_rewrites_its_own_sidecar(workspace, capsys):
    arguments = ["search", "m.onnx", "--target", "stm32h743", "--budget", "1", "--log", "trials.txt"]
    assert main(arguments) == 0
    assert main(arguments) == 0          # the second run replaces the first run's log and sidecar
    assert (workspace / "trials.txt.jsonl").read_text().count("\n") >= 1


def test_run_never_overwrites_a_user_file_named_like_its_sidecar(workspace, capsys):
    np.savez(workspace / "x.npz", x=np.zeros((1, 3, 8, 8), np.float32))
    (workspace / "y.json").write_text('{"mine": true}')
    _one_error(capsys, ["run", "m.onnx", "--inputs", "x.npz", "-o", "y.npz"], "y.json")
    assert (workspace / "y.json").read_text() == '{"mine": true}' and not (workspace / "y.npz").exists()
    (workspace / "y.json").unlink()
    assert main(["run", "m.onnx", "--inputs", "x.npz", "-o", "y.npz"]) == 0
    assert main(["run", "m.onnx", "--inputs", "x.npz", "-o", "y.npz"]) == 0     # its own sidecar is replaced


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero", "/dev/full"])
def test_search_log_to_a_device_creates_no_file_beside_it(workspace, capsys, device):
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    sidecar = Path(device + ".jsonl")
    before = _identity(sidecar)
    _one_error(capsys, ["search", "m.onnx", "--target", "stm32h743", "--budget", "1", "--log", device], device)
    assert _identity(sidecar) == before


def test_an_output_may_not_be_a_device(workspace, capsys):
    _one_error(capsys, ["analyze", "m.onnx", "--json", "/dev/null"], "/dev/null")


def test_an_output_through_a_symlink_out_of_its_folder_is_refused(workspace, capsys):
    outside = workspace / "elsewhere"
    outside.mkdir()
    (outside / "keep.json").write_text("precious")
    (workspace / "out").mkdir()
    os.symlink(outside / "keep.json", workspace / "out" / "a.json")
    _one_error(capsys, ["analyze", "m.onnx", "--json", "out/a.json"], "symbolic link", code=5)
    assert (outside / "keep.json").read_text() == "precious"


# -- 7: init and control characters in a file name -------------------------------------------

@pytest.mark.parametrize("name", ["a\nb.tflite", "a\rb.tflite", "a\x1b[31mb.tflite", "a\x7fb.tflite",
                                  'a"b\\c.tflite'])
def test_init_escapes_control_characters_and_keeps_a_valid_file(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    model = shared_model("mlperf_tiny/fc_autoencoder_float.tflite")
    (tmp_path / "good.tflite").write_bytes(model.read_bytes())
    assert main(["init", "good.tflite"]) == 0
    (tmp_path / name).write_bytes(model.read_bytes())
    assert main(["init", name, "--force"]) == 0, capsys.readouterr().err
    assert load_project(tmp_path / "mcudeploy.toml").model == tmp_path / name


def test_init_refuses_an_undecodable_name_before_replacing_the_project_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model = shared_model("mlperf_tiny/fc_autoencoder_float.tflite")
    (tmp_path / "good.tflite").write_bytes(model.read_bytes())
    assert main(["init", "good.tflite"]) == 0
    before = _digest(tmp_path / "mcudeploy.toml")
    name = os.fsdecode(b"bad\xff.tflite")          # not UTF-8: no TOML text can name it
    (tmp_path / name).write_bytes(model.read_bytes())
    _one_error(capsys, ["init", name, "--force"], "UTF-8")
    assert _digest(tmp_path / "mcudeploy.toml") == before


# -- 8, 9: files that are not run stores -----------------------------------------------------

def _not_recorded(caplog) -> list[str]:
    """The recording hook's warnings (logged: in-process, pytest's handler takes them)."""
    return [r.getMessage() for r in caplog.records if "run not recorded" in r.getMessage()]


def _foreign_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.execute("DROP TABLE t")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("kind", ["empty", "one byte", "foreign sqlite"])
def test_a_file_that_is_not_a_store_is_never_made_one(workspace, capsys, caplog, monkeypatch, kind):
    path = workspace / "some.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "one byte":
        path.write_bytes(b"x")
    else:
        _foreign_sqlite(path)
    before = _digest(path)
    _one_error(capsys, ["runs", "list", "--runs", str(path)], str(path))
    assert _digest(path) == before
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    monkeypatch.setenv("MCUDEPLOY_RUNS", str(path))
    assert main(["analyze", "m.onnx"]) == 0                 # recording never fails a command
    assert len(_not_recorded(caplog)) == 1
    assert _digest(path) == before and sorted(p.name for p in workspace.iterdir()) == ["m.onnx", "some.db"]


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero", "/dev/full"])
def test_a_device_as_run_store_creates_no_journal(workspace, capsys, caplog, monkeypatch, device):
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    journals = [Path(device + suffix) for suffix in ("-journal", "-wal", "-shm")]
    before = [_identity(journal) for journal in journals]
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    assert main(["analyze", "m.onnx", "--runs", device]) == 0
    warnings = _not_recorded(caplog)
    assert len(warnings) == 1 and device in warnings[0]
    assert [_identity(journal) for journal in journals] == before      # not created, nor rewritten
    _one_error(capsys, ["runs", "list", "--runs", device], device)


def test_read_only_commands_never_create_a_store(workspace, capsys):
    for argv in (["runs", "list"], ["runs", "show", "1"], ["report", "1", "-o", "r.html"]):
        assert main([*argv, "--runs", "new.sqlite"]) == 2
    assert not (workspace / "new.sqlite").exists() and not (workspace / "r.html").exists()


# -- 16: run ids, limits and stored rows ------------------------------------------------------

@pytest.mark.parametrize("argv", [["runs", "show", str(10 ** 20)], ["runs", "show", "-" + str(10 ** 20)],
                                  ["runs", "diff", "1", str(2 ** 64)], ["report", str(2 ** 63), "-o", "r.html"],
                                  ["runs", "show", "\u2460"], ["runs", "show", "\u0661"],
                                  ["doctor", str(10 ** 20)]])
def test_run_ids_beyond_64_bits_or_not_ascii_digits_are_one_line(store, capsys, argv):
    _one_error(capsys, [*argv, "--runs", str(store)], "")


def test_a_huge_limit_lists_every_run(store, capsys):
    assert main(["runs", "list", "--limit", str(10 ** 20), "--runs", str(store), "--json"]) == 0
    assert '"id": 1' in capsys.readouterr().out


@pytest.mark.parametrize("column", ["config_json", "argv_json"])
def test_a_stored_row_with_broken_json_is_one_line(store, capsys, column):
    connection = sqlite3.connect(store)
    connection.execute(f"UPDATE runs SET {column} = '{{broken'")
    connection.commit()
    connection.close()
    for argv in (["runs", "list"], ["runs", "show", "1"], ["runs", "export", "--csv", "-"]):
        _one_error(capsys, [*argv, "--runs", str(store)], "run 1")


# -- 17: output names longer than the file system allows --------------------------------------

@pytest.mark.parametrize("argv", [["generate", "m.onnx", "--target", "stm32h743", "-o", LONG],
                                  ["analyze", "m.onnx", "--json", LONG],
                                  ["plan", "m.onnx", "--target", "stm32h743", "--json", LONG],
                                  ["plan", "m.onnx", "--target", "stm32h743", "--png", f"{LONG}/x.png"],
                                  ["init", "m.onnx", "-o", LONG]])
def test_an_output_name_longer_than_the_limit_is_one_line(workspace, capsys, argv):
    _one_error(capsys, argv, "too long")


def test_a_report_name_longer_than_the_limit_is_one_line(store, capsys):
    _one_error(capsys, ["report", "last", "-o", LONG, "--runs", str(store)], "too long")


def test_a_run_store_name_longer_than_the_limit_is_one_warning(workspace, caplog, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    assert main(["analyze", "m.onnx", "--runs", LONG]) == 0
    warnings = _not_recorded(caplog)
    assert len(warnings) == 1 and "too long" in warnings[0]


def test_the_guard_refuses_a_nul_in_an_output_name(workspace, capsys):
    _one_error(capsys, ["analyze", "m.onnx", "--json", "a\x00b.json"], "NUL")


def test_the_model_stays_in_place(workspace):
    """A guard that refused everything would pass the tests above: a plain output still works."""
    assert main(["analyze", "m.onnx", "--json", "a.json"]) == 0 and (workspace / "a.json").is_file()


WRITER = """
import sys, time
from mcudeploy.runs import RunStore
first = RunStore.open(sys.argv[1])            # as the recording hook does: it creates the store
first.begin("sweep", ["sweep"], config={})
second = RunStore.open(sys.argv[1])           # as the sweep's cell recorder does, in the same process
for index in range(6):
    with second.record("plan", ["plan"], config={"i": index}):
        pass
    print(index, flush=True)
    time.sleep(0.3)
second.close()
first.close()
"""


def test_a_second_connection_in_a_process_keeps_the_store_visible_to_readers(tmp_path):
    """Opening the store again in a process that has it open must not touch the file outside
    SQLite (closing any descriptor of it drops the process's POSIX locks): other processes
    that open and close it while it is written must see each committed run."""
    import subprocess
    import sys

    path = tmp_path / "runs.sqlite"
    environment = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                              env=environment)
    seen = []
    assert writer.stdout is not None
    for line in writer.stdout:                     # after each committed run, read it from here
        with RunStore.open(path, create=False) as store:
            seen.append(len(store.list_runs(command="plan")))
        assert int(line) + 1 == seen[-1], seen
    assert writer.wait(timeout=30) == 0 and seen == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("name", ["x" * 4097, "d/" + "n" * 300, "n" * 200 + "\u00e9" * 30])
def test_a_model_or_output_name_the_file_system_refuses_is_one_line_with_recording_on(tmp_path, monkeypatch,
                                                                                     capsys, name):
    """Found by the fuzz campaign after both halves of issue 26 met: the recording hook and the
    model loader stat()ed a name too long for the file system (OSError) before the guard spoke."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD", raising=False)
    monkeypatch.setenv("MCUDEPLOY_RUNS", str(tmp_path / "runs.sqlite"))
    (tmp_path / "d").mkdir()
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    for argv in (["analyze", name], ["generate", str(model), "--target", "stm32h743", "-o", name]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("mcudeploy: error:") and "too long" in err and "Traceback" not in err


def test_an_output_that_is_a_symlink_loop_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    os.symlink("loop", tmp_path / "loop")
    assert main(["init", str(shared_model("mlperf_tiny/resnet8_int8.tflite")), "-o", "loop", "--force"]) == 2
    assert "a loop" in capsys.readouterr().err
