"""``generate`` only removes or replaces files it wrote itself (known by the content hash
in its manifest), never follows a symlink out of ``-o``, and never trusts a path read from
a file (issue 16). Each data-loss class: the user's files are byte-identical afterwards."""
from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.codegen import output_dir
from mcudeploy.codegen.identifiers import comment_text, string_literal
from mcudeploy.codegen.output_dir import MANIFEST, write_project
from mcudeploy.errors import UnsafePathError, UsageError

FILES = {"network.c": "int x;\n", "runtime/src/a.c": "int a;\n", "main.c": "int main;\n"}


def _manifest(folder: Path, entries: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MANIFEST).write_text(json.dumps({"generator": "mcudeploy", "format": 2, "files": entries}))


@pytest.mark.parametrize("force", [False, True])
def test_a_planted_manifest_deletes_nothing(tmp_path, force):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    folder = tmp_path / "out"
    _manifest(folder, {"../victim.txt": "0" * 64, str(victim): "0" * 64,
                       "sub/../../victim.txt": "0" * 64, "notes.txt": "0" * 64})
    (folder / "notes.txt").write_text("mine")          # listed, but its hash does not match
    if force:
        write_project(FILES, folder, force=True)
    else:
        with pytest.raises(UsageError, match="notes.txt"):
            write_project(FILES, folder)
    assert victim.read_text() == "precious" and (folder / "notes.txt").read_text() == "mine"


def test_only_files_with_our_hash_are_removed(tmp_path):
    folder = tmp_path / "out"
    write_project(FILES, folder)
    (folder / "main.c").write_text("edited by the user")   # no longer ours
    write_project({k: v for k, v in FILES.items() if k not in ("main.c", "network.c")}, folder, force=True)
    assert not (folder / "network.c").exists()               # ours, stale: removed
    assert (folder / "main.c").read_text() == "edited by the user"


def test_a_manifest_without_hashes_proves_nothing(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "network.c").write_text("user file")
    (folder / MANIFEST).write_text(json.dumps({"generator": "mcudeploy", "files": ["network.c"]}))
    with pytest.raises(UsageError, match="network.c"):
        write_project(FILES, folder)
    write_project(FILES, folder, force=True)
    assert (folder / "network.c.user").read_text() == "user file"


@pytest.mark.parametrize("link", ["runtime", "runtime/src", "network.c"])
def test_a_symlink_inside_the_folder_is_refused(tmp_path, link):
    user = tmp_path / "user"
    (user / "src").mkdir(parents=True)
    (user / "src" / "a.c").write_text("user code")
    (tmp_path / "notes.txt").write_text("user notes")
    folder = tmp_path / "out"
    (folder / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(tmp_path / "notes.txt" if link == "network.c" else user / ("src" if link.endswith("src") else ""),
               folder / link)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        write_project(FILES, folder, force=True)
    assert (user / "src" / "a.c").read_text() == "user code"
    assert (tmp_path / "notes.txt").read_text() == "user notes"


def test_disk_full_half_way_keeps_the_manifest_true(tmp_path, monkeypatch):
    folder = tmp_path / "out"
    real = output_dir._write_file
    calls = []

    def failing(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(output_dir, "_write_file", failing)
    with pytest.raises(UsageError, match="No space left"):
        write_project(FILES, folder)
    monkeypatch.undo()
    recorded = json.loads((folder / MANIFEST).read_text())["files"]
    assert list(recorded) == ["main.c"]          # what is on disk, by hash
    write_project(FILES, folder)                 # the next run knows its own file: no --force


def test_cli_generate_with_a_planted_manifest_and_a_linked_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    (tmp_path / "m.tflite").write_bytes(shared_model("tflite_micro/hello_world_int8.tflite").read_bytes())
    (tmp_path / "victim.txt").write_text("precious")
    _manifest(tmp_path / "gen", {"../victim.txt": "0" * 64})
    assert main(["generate", "m.tflite", "-o", "gen"]) == 0
    assert (tmp_path / "victim.txt").read_text() == "precious"
    (tmp_path / "userdir").mkdir()
    (tmp_path / "userdir" / "keep.h").write_text("user header")
    os.makedirs(tmp_path / "gen3")
    os.symlink(tmp_path / "userdir", tmp_path / "gen3" / "runtime")
    assert main(["generate", "m.tflite", "-o", "gen3", "--force"]) == 5
    assert "gen3/runtime is a symbolic link" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "userdir").iterdir()] == ["keep.h"]


def test_names_in_c_have_no_bidi_or_control_characters():
    name = "a\u202eb\u2066c\x1b[1m\x85d*/e??=\n\udcff\\"
    comment = comment_text(name)
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x00-\x1f\x7f-\x9f]", comment)
    assert "*/" not in comment and "??=" not in comment and not comment.endswith("\\")
    comment.encode("utf-8")                       # a lone surrogate became an escape
    literal = string_literal(name)
    assert literal.isascii() and not re.search("[\x00-\x1f]", literal)
