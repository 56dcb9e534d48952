"""Issue 26, ``mcudeploy deploy`` (findings 3, 4, 10, 22 and the NUL of 19): deploy writes
through a manifest like ``generate`` (no user file in its output folder replaced, no symlink
followed out of it, its own earlier output rewritten), ``[project] name`` is a name, a
resumed deploy notices a changed source model, and a failed stage says why on stderr. Each
test fails without the fix. The project is the 265 K-parameter autoencoder with no target,
no generated-code check and no test vectors: a whole deploy takes about a second."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main

MODEL = "mlperf_tiny/fc_autoencoder_float.tflite"
WRITTEN = ("model_int8.onnx", "report.html", "deployment.toml", "quantization.json", "deploy.json",
           "passed.toml", "fallback.toml")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    shutil.copy(shared_model(MODEL), folder / "model.tflite")
    np.save(folder / "calib.npy", np.random.default_rng(0).normal(size=(4, 640)).astype(np.float32))
    return folder


def write_project(folder: Path, project: str = "", calibration: str = 'data = "calib.npy"') -> Path:
    path = folder / "mcudeploy.toml"
    path.write_text(f'[project]\nmodel = "model.tflite"\n{project}\n[calibration]\n{calibration}\n'
                    "[validation]\nsamples = 2\ncosine_min = 0.5\ncode = []\n[generate]\ntest_vectors = 0\n")
    return path


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("mcudeploy: error:")]


# -- 3: user files in the output folder ------------------------------------------------------

@pytest.mark.parametrize("name", WRITTEN)
def test_deploy_never_replaces_a_user_file_in_its_output_folder(project, capsys, name):
    write_project(project)
    (project / "deploy").mkdir()
    (project / "deploy" / name).write_text("the user's own file\n")
    assert main(["deploy", "--quiet"]) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1 and name in lines[0], lines
    assert (project / "deploy" / name).read_text() == "the user's own file\n"


@pytest.mark.parametrize("output", [".", ".."])
def test_deploy_into_the_project_folder_or_its_parent_keeps_user_files(project, capsys, output):
    write_project(project, f'output = "{output}"')
    folder = (project / output).resolve()
    (folder / "report.html").write_text("mine")
    (folder / "model_int8.onnx").write_text("mine too")
    before = _digests(project.parent)
    assert main(["deploy", "--quiet"]) == 2
    assert _digests(project.parent) == before


def test_deploy_refuses_an_output_folder_linked_out_of_the_project(project, capsys, tmp_path):
    write_project(project, 'output = "out"')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, project / "out")
    assert main(["deploy", "--quiet"]) == 5
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "symbolic link" in lines[0], lines
    assert list(elsewhere.iterdir()) == []


def test_deploy_refuses_a_link_planted_in_its_output_folder(project, capsys):
    write_project(project)
    assert main(["deploy", "--quiet"]) == 0
    notes = project / "notes.txt"
    notes.write_text("my notes")
    (project / "deploy" / "passed.toml").unlink()
    os.symlink(notes, project / "deploy" / "passed.toml")
    assert main(["deploy", "--quiet"]) == 5
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "passed.toml" in lines[0], lines
    assert notes.read_text() == "my notes"


def test_deploy_rewrites_its_own_output_and_resumes(project, capsys):
    write_project(project)
    assert main(["deploy", "--quiet"]) == 0
    assert main(["deploy", "--quiet"]) == 0                       # over its own previous output
    assert main(["deploy", "--quiet", "--from", "validate"]) == 0
    assert main(["deploy", "--quiet", "--from", "generate"]) == 0
    assert all((project / "deploy" / name).is_file() for name in WRITTEN)


def test_deploy_refuses_a_file_it_wrote_that_was_edited_since(project, capsys):
    write_project(project)
    assert main(["deploy", "--quiet"]) == 0
    (project / "deploy" / "deployment.toml").write_text("# my edit\n")
    assert main(["deploy", "--quiet"]) == 2
    assert "deployment.toml" in _error_lines(capsys)[0]
    assert (project / "deploy" / "deployment.toml").read_text() == "# my edit\n"


# -- 4: [project] name is a name --------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../x", "/tmp/x", "a/b", "a\\\\b", "..", "a\\u001bb", "a\\nb"])
def test_a_project_name_that_is_a_path_is_refused(project, capsys, name):
    write_project(project, f'name = "{name}"')
    before = _digests(project.parent)
    assert main(["deploy", "--quiet"]) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "[project] name" in lines[0], lines
    assert _digests(project.parent) == before and not (project / "deploy").exists()


# -- 19: a NUL in a project path --------------------------------------------------------------

@pytest.mark.parametrize("section, key", [("project", "model"), ("project", "output"), ("calibration", "data")])
def test_a_nul_in_a_project_path_is_one_line(project, capsys, section, key):
    path = write_project(project, 'output = "a\\u0000b"' if key == "output" else "",
                         'data = "a\\u0000b"' if key == "data" else 'data = "calib.npy"')
    if key == "model":
        path.write_text(path.read_text().replace('model = "model.tflite"', 'model = "model\\u0000.tflite"'))
    assert main(["deploy", "--quiet"]) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1 and f"[{section}] {key}" in lines[0] and "NUL" in lines[0], lines


# -- 10: a resumed deploy after the source model changed ---------------------------------------

@pytest.mark.parametrize("stage", ["validate", "generate"])
def test_resume_after_the_source_model_changed_is_refused(project, capsys, stage):
    write_project(project)
    assert main(["deploy", "--quiet"]) == 0
    firmware = _digests(project / "deploy" / "firmware")
    shutil.copy(shared_model("mlperf_tiny/resnet8_float.tflite"), project / "model.tflite")
    assert main(["deploy", "--quiet", "--from", stage]) == 2
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "model.tflite" in lines[0] and "changed" in lines[0], lines
    assert _digests(project / "deploy" / "firmware") == firmware


# -- 22: a failed stage says why on stderr -----------------------------------------------------

def test_a_failed_stage_prints_one_error_line_with_the_right_reason(project, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    write_project(project, calibration='data = "/dev/zero"')
    code = main(["deploy", "--quiet"])
    assert code != 0
    lines = _error_lines(capsys)
    assert len(lines) == 1 and "quantize" in lines[0] and "/dev/zero" in lines[0], lines
    assert "not a regular file" in lines[0] and "no such" not in lines[0] and "does not exist" not in lines[0]
