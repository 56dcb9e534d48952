"""``mcudeploy sweep`` on hostile sweep files and options (issue 26, findings 2, 5, 11, 15, 19,
21, 23): a sweep file names only functions of ``.py`` files in its own folder, ``--list``
runs nothing, no output may be one of the sweep's inputs, and bad options are refused before
any cell runs."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from conftest import shared_model
from mcudeploy.cli import cmd_sweep
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError

MODEL = "mlperf_tiny/resnet8_int8.tflite"


def _sweep(folder: Path, body: str, name: str = "sweep.toml") -> Path:
    path = folder / name
    path.write_text('[sweep]\nstages = ["analyze"]\n' + body)
    return path


@pytest.fixture
def no_sweep_runs(monkeypatch):
    """Fails the test if a sweep starts: every check here comes before any cell."""
    def refuse(*_arguments, **_keywords):
        raise AssertionError("the sweep ran; the option should have been refused first")
    monkeypatch.setattr(cmd_sweep, "run_sweep", refuse)


def test_a_module_callable_is_refused_and_deletes_nothing(tmp_path, monkeypatch, capsys):
    """Finding 2: ``shutil:rmtree`` with ``path = ["precious"]`` deleted that folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    path = _sweep(tmp_path, '[[generators]]\ncallable = "shutil:rmtree"\nparameters = {path = ["precious"]}\n')
    assert main(["sweep", str(path), "--no-record", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'shutil:rmtree'" in err and "file.py:function" in err and err.count("\n") == 1
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"


def test_list_runs_nothing(tmp_path, monkeypatch, capsys):
    """Finding 11: ``--list`` ran ``os:system`` and imported generator files, also outside the folder."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran.txt"
    system = _sweep(tmp_path, f'[[generators]]\ncallable = "os:system"\nparameters = {{command = ["touch {marker}"]}}\n',
                    "system.toml")
    assert main(["sweep", str(system), "--list", "--no-record"]) == 2
    outside = tmp_path / "outside"
    inside = tmp_path / "inside"
    outside.mkdir()
    inside.mkdir()
    code = f'open({str(marker)!r}, "w").write("imported")\ndef make(size):\n    return b""\n'
    (outside / "gen.py").write_text(code)
    (inside / "gen.py").write_text(code)
    far = _sweep(inside, '[[generators]]\ncallable = "../outside/gen.py:make"\nparameters = {size = [1]}\n', "far.toml")
    assert main(["sweep", str(far), "--list", "--no-record"]) == 2
    assert "outside the sweep file's folder" in capsys.readouterr().err
    near = _sweep(inside, '[[generators]]\ncallable = "gen.py:make"\nparameters = {size = [1, 2]}\n', "near.toml")
    assert main(["sweep", str(near), "--list", "--no-record"]) == 0
    assert "runs no generator" in capsys.readouterr().out
    assert not marker.exists(), "a sweep file's code ran at --list"
    missing = _sweep(inside, '[[generators]]\ncallable = "gen.py:other"\nparameters = {size = [1]}\n', "missing.toml")
    with pytest.raises(UsageError, match="defines no function 'other'"):
        cmd_sweep.load_sweep(missing)
    assert not marker.exists()


def test_an_output_that_is_a_model_of_the_sweep_is_refused(tmp_path, capsys, no_sweep_runs):
    """Finding 5: ``--csv MODEL`` overwrote a model of the sweep's own models axis."""
    model = tmp_path / "model.tflite"
    model.write_bytes(Path(shared_model(MODEL)).read_bytes())
    before = model.read_bytes()
    path = _sweep(tmp_path, '[axes]\nmodels = ["model.tflite"]\n')
    for option in ("--csv", "--out"):
        assert main(["sweep", str(path), option, str(model), "--no-record"]) == 2, option
        assert "the command reads" in capsys.readouterr().err
    assert model.read_bytes() == before


@pytest.mark.parametrize("argv, words", [
    (["--timeout", "inf"], "--timeout inf: give a number of seconds"),       # finding 21
    (["--timeout", "nan"], "--timeout nan"),
    (["--timeout", "-1"], "--timeout -1"),
    (["--connect-timeout", "inf"], "--connect-timeout inf"),
    (["--workers", "2147483648"], "--workers 2147483648: give 1 to"),       # finding 19
    (["--png", "x.out"], "--png x.out: give a picture file name"),          # finding 19
    (["--html", "-"], "--html -: the HTML report is written to a file"),    # finding 23
])
def test_bad_options_are_refused_before_the_sweep_runs(tmp_path, monkeypatch, capsys, no_sweep_runs, argv, words):
    monkeypatch.chdir(tmp_path)             # where a file named "-" would land
    model = Path(shared_model(MODEL))
    path = _sweep(tmp_path, f'[axes]\nmodels = ["{model}"]\n')
    assert main(["sweep", str(path), *argv, "--no-record"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not (tmp_path / "-").exists()


def test_a_timeout_in_the_sweep_file_is_bounded(tmp_path):
    path = _sweep(tmp_path, f'timeout = 1e300\n[axes]\nmodels = ["{shared_model(MODEL)}"]\n')
    with pytest.raises(UsageError, match=r"\[sweep\] timeout"):
        cmd_sweep.load_sweep(path)


def test_a_scheduler_that_never_answers_honours_the_connect_timeout():
    """Finding 15: a port that accepts but never answers waited forever."""
    from mcudeploy.sweep.cluster import _probe

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    outcome: list[BaseException | None] = []

    def probe() -> None:
        try:
            _probe(f"tcp://127.0.0.1:{server.getsockname()[1]}", 1.0)
            outcome.append(None)
        except BaseException as error:      # noqa: BLE001 - judged below
            outcome.append(error)

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(15)
    server.close()
    for connection, _ in accepted:
        connection.close()                   # releases a probe that still waits
    assert not worker.is_alive() and outcome, "the probe ignored --connect-timeout"
    assert isinstance(outcome[0], UsageError) and "no handshake in 1 s" in str(outcome[0])
