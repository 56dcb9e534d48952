"""Output paths (issue 16): every writer refuses a folder, a missing folder and a file the
command reads, before any work; writes are atomic, so a failed write (disk full) keeps the
old file and is one ``mcudeploy: error:`` line. One test per data-loss class shows the
user's files byte-identical after the command."""
from __future__ import annotations

import errno
import hashlib
import os
import random
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from fuzz_models import onnx_conv_net
from mcudeploy import safe_io
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError
from onnx_builders import save


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    save(onnx_conv_net(random.Random(0)), tmp_path, "m.onnx")
    data = np.random.default_rng(0).normal(size=(4, 1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "c.npy", data)
    np.savez(tmp_path / "x.npz", x=data[0])
    (tmp_path / "afolder").mkdir()
    return tmp_path


def _refused(capsys, argv: list[str], words: str, code: int = 2) -> None:
    assert main(argv) == code
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mcudeploy: error:")]
    assert len(lines) == 1 and words in lines[0], lines


@pytest.mark.parametrize("argv, words", [
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "m.onnx"], "the file m.onnx the command reads"),
    (["run", "m.onnx", "--inputs", "x.npz", "-o", "x.npz"], "the command reads"),
    (["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx", "--report", "c.npy"], "--report c.npy"),
    (["analyze", "m.onnx", "--csv", "m.onnx"], "--csv m.onnx"),
    (["analyze", "m.onnx", "--json", "afolder"], "is a folder"),
    (["analyze", "m.onnx", "--json", "nope/a.json"], "folder nope does not exist"),
    (["plan", "m.onnx", "--png", "afolder"], "is a folder"),
    (["plan", "m.onnx", "--json", "m.onnx"], "the command reads"),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--data", "x.npz", "--json", "x.npz"], "the command reads"),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--plot", "afolder"], "is a folder"),
])
def test_writers_refuse_before_any_work_and_keep_user_files(workspace, capsys, argv, words):
    before = _digests(workspace)
    _refused(capsys, argv, words)
    assert _digests(workspace) == before


def test_export_tflm_over_its_model_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = tmp_path / "m.tflite"
    model.write_bytes(shared_model("tflite_micro/hello_world_int8.tflite").read_bytes())
    before = _digests(tmp_path)
    _refused(capsys, ["plan", "m.tflite", "--export-tflm", "m.tflite", "--no-record"], "the command reads")
    assert _digests(tmp_path) == before


def test_same_file_through_a_symlink_and_a_hard_link(tmp_path):
    source = tmp_path / "model.onnx"
    source.write_bytes(b"model")
    os.symlink(source, tmp_path / "soft.json")
    os.link(source, tmp_path / "hard.json")
    for name in ("soft.json", "hard.json"):
        with pytest.raises(UsageError, match="the command reads"):
            safe_io.check_output_path(tmp_path / name, "--json", inputs=[source])
    assert source.read_bytes() == b"model"


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old contents")
    os.chmod(path, 0o640)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_io.os, "replace", disk_full)
    with pytest.raises(UsageError, match="No space left on device.*unchanged"):
        safe_io.write_text(path, "new contents", "--json")
    assert path.read_text() == "old contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]   # no temporary left
    monkeypatch.undo()
    safe_io.write_text(path, "new contents", "--json")
    assert path.read_text() == "new contents" and (path.stat().st_mode & 0o777) == 0o640


def test_the_disk_full_device_is_one_error_line(workspace, capsys):
    """/dev/full is refused as a device before any work (issue 26); a disk that fills up
    during the write is the test above."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    _refused(capsys, ["analyze", "m.onnx", "--json", "/dev/full"], "is a device")


def test_writing_through_a_symlink_replaces_the_target_not_the_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    os.symlink(target, tmp_path / "link.json")
    safe_io.write_text(tmp_path / "link.json", "new", "--json")
    assert (tmp_path / "link.json").is_symlink() and target.read_text() == "new"


def test_png_whatever_the_suffix(workspace, capsys):
    assert main(["plan", "m.onnx", "--png", "timeline.xyz"]) == 0
    assert (workspace / "timeline.xyz").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (workspace / "timeline.xyz.png").exists()
