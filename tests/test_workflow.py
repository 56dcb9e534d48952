"""The project file and the staged deployment's parts, fast: ``mcudeploy init`` writes a file
that reads back, every mistake in a project file is one line naming the file, section and key
(with the closest known key), the optimisation ladder, the core -> QEMU board rule, the
results-table row, and the bad inputs of ``mcudeploy deploy`` (missing model, locked or corrupt
run store, unknown run, resume without an earlier deploy)."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError
from mcudeploy.options import DeploymentOptions, load_options
from mcudeploy.targets import load_target
from mcudeploy.validate.qemu import qemu_engine
from mcudeploy.workflow import STAGES, load_project, parse_project, stage_runs
from mcudeploy.workflow.context import DeployContext
from mcudeploy.workflow.ladder import ladder, minimal_options
from mcudeploy.workflow.records import OK, SKIPPED, StageResult
from mcudeploy.workflow.summary import results_row

MODEL = "mlperf_tiny/fc_autoencoder_float.tflite"


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copy(shared_model(MODEL), tmp_path / "model.tflite")
    np.save(tmp_path / "calib.npy", np.random.default_rng(0).normal(size=(4, 640)).astype(np.float32))
    return tmp_path


def write(folder: Path, text: str) -> Path:
    path = folder / "mcudeploy.toml"
    path.write_text('[project]\nmodel = "model.tflite"\n' + text)
    return path


def test_init_writes_a_commented_file_that_reads_back(folder, capsys):
    assert main(["init", str(folder / "model.tflite"), "--target", "stm32h743", "--calib", str(folder / "calib.npy"),
                 "-o", str(folder / "mcudeploy.toml")]) == 0
    text = (folder / "mcudeploy.toml").read_text()
    project = load_project(folder / "mcudeploy.toml")
    assert project.model == folder / "model.tflite" and project.deployment.target == "stm32h743"
    assert project.section("calibration")["data"] == folder / "calib.npy"
    assert project.deployment == DeploymentOptions(target="stm32h743")     # every other option at its default
    assert 'model = "model.tflite"' in text and 'data = "calib.npy"' in text     # relative to the file
    assert "# sram_limit = \"384K\"" in text and "[deployment.memory]" in text
    assert "# model model.tflite: input input_1 float32[1,640]; output Identity float32[1,640]" in text
    assert "# input_shapes = { input_1 = [1, 640] }" in text    # the model's own inputs, not a placeholder
    for stage in STAGES:
        assert stage in text
    # never overwritten without --force
    assert main(["init", str(folder / "model.tflite"), "-o", str(folder / "mcudeploy.toml")]) == 2
    assert "exists; it is not overwritten" in capsys.readouterr().err
    assert (folder / "mcudeploy.toml").read_text() == text
    assert main(["init", str(folder / "model.tflite"), "-o", str(folder / "mcudeploy.toml"), "--force"]) == 0
    assert load_project(folder / "mcudeploy.toml").deployment.target is None


def test_init_refuses_an_unknown_target(folder, capsys):
    assert main(["init", str(folder / "model.tflite"), "--target", "stm32h7433", "-o", str(folder / "p.toml")]) == 2
    assert "stm32h7433" in capsys.readouterr().err and not (folder / "p.toml").exists()


@pytest.mark.parametrize("text, message", [
    ('[deployment.memory]\nsram_limt = "384K"\n',
     "unknown key 'sram_limt' in [deployment.memory]; did you mean 'sram_limit'?"),
    ('[deployment.memroy]\nreserve = "1K"\n', "unknown section [deployment.memroy]; did you mean 'memory'?"),
    ('[calibraton]\ndata = "calib.npy"\n', "unknown section [calibraton]; did you mean 'calibration'?"),
    ('[validation]\ncosine_mn = 0.9\n', "unknown key 'cosine_mn' in [validation]; did you mean 'cosine_min'?"),
    ('[deployment.memory]\nreserve = -4096\n', "[deployment.memory] reserve: a size must not be negative"),
    ('[deployment.memory]\nstack = "four K"\n', "[deployment.memory] stack: expected bytes"),
    ('[validation]\nsamples = -3\n', "[validation] samples: must be at least 1, got -3"),
    ('[validation]\nsamples = "ten"\n', "[validation] samples: expected an integer, got 'ten'"),
    ('[validation]\ncode = ["host", "qemu-m5"]\n', "'qemu-m5' is not one of host, qemu, qemu-m4, qemu-m55"),
    ('[calibration]\nobserver = "minmx"\n', "'minmx' is not one of minmax"),
    ('[calibration]\nstd = [0.0]\n', "a standard deviation of 0"),
    ('[generate]\ntrustzone = "yes"\n', "[generate] trustzone: expected true or false"),
    ('[calibration]\ndata = "missing.npz"\n', "[calibration] data"),
    ('[deployment.schedule]\norder = "random"\n', "[deployment.schedule] order: 'random' is not one of"),
])
def test_a_mistake_in_the_project_file_is_one_clear_line(folder, text, message):
    path = write(folder, text)
    with pytest.raises(UsageError) as error:
        load_project(path)
    assert message in str(error.value) and str(path) in str(error.value) and "\n" not in str(error.value)


def test_missing_model_and_missing_file(folder, capsys):
    path = folder / "mcudeploy.toml"
    path.write_text('[project]\nmodel = "nope.tflite"\n')
    assert main(["deploy", str(path)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "[project] model" in error and "nope.tflite: no such file" in error
    assert main(["deploy", str(folder / "other.toml")]) == 2
    assert "no such project file; write one with 'mcudeploy init MODEL'" in capsys.readouterr().err
    path.write_text('[project]\nname = "x"\n')
    with pytest.raises(UsageError, match=r"\[project\] model is required"):
        load_project(path)


def test_not_toml_is_refused(folder):
    with pytest.raises(UsageError, match="not valid TOML"):
        parse_project("[project\nmodel =", folder / "mcudeploy.toml")


def test_deployment_part_is_a_config_file_under_deployment(folder):
    """[deployment.X] of a project file == [X] of a --config file."""
    sections = '[target]\nname = "stm32f746"\n[memory]\nreserve = "8K"\n[schedule]\nreuse = false\n'
    config = folder / "pinned.toml"
    config.write_text(sections)
    project = load_project(write(folder, sections.replace("[", "[deployment.")))
    assert project.deployment == load_options(config)
    assert project.locked_options() == {"target", "reserve", "reuse"}


def test_ladder_raises_one_optimisation_at_a_time():
    options = DeploymentOptions(target="stm32h743", reserve=1024)
    steps = ladder(options)
    assert [s.name for s in steps] == ["minimal", "memory-aware order", "buffer reuse", "fast kernels"]
    assert steps[-1].options == options and steps[0].options == minimal_options(options)
    assert steps[0].options.reserve == 1024 and not steps[0].options.reuse and steps[0].options.schedule == "file"
    for before, after in zip(steps, steps[1:]):   # each step changes something
        assert before.options != after.options
    # a project asking for no reuse has no reuse step, and its last step is its own options
    plain = DeploymentOptions(schedule="file", reuse=False, overlap=False, concat_in_place=False, kernels="reference")
    assert [s.name for s in ladder(plain)] == ["minimal"]


@pytest.mark.parametrize("target, engine", [("stm32f407", "qemu-m4"), ("stm32h743", "qemu-m4"),
                                            ("stm32u585", "qemu-m55"), ("stm32n6", "qemu-m55"),
                                            ("npu-mcu", "qemu-m55"), ("stm32g0b1", "qemu-m4"), (None, "qemu-m4")])
def test_the_qemu_board_follows_the_target_core(target, engine):
    assert qemu_engine(load_target(target) if target else None) == engine


def test_results_row_says_what_is_missing(folder):
    project = load_project(write(folder, ""))
    context = DeployContext(project)
    context.results = {
        "analyze": StageResult("analyze", details={"version": "v1", "sha256": "ab" * 32, "input_resolution": "1x640"}),
        "quantize": StageResult("quantize", details={"type": "int8, per-channel weights"}),
        "validate": StageResult("validate", SKIPPED, reason="no float model"),
        "search": StageResult("search", OK, figures={"arena_bytes": 2560, "flash_bytes": 270880},
                              details={"latency_ms": None, "latency_note": "not estimated: no target",
                                       "offload_macc": None})}
    cells = results_row(context).cells()
    assert cells == {"model version": "v1", "input resolution": "1x640", "quantization type": "int8, per-channel weights",
                     "activation memory": "2,560 B", "flash": "270,880 B", "latency": "not estimated: no target",
                     "NPU utilisation": "no NPU on the target", "top-1 agreement": "-", "accuracy": "-",
                     "cosine": "-"}
    assert results_row(context).figures()["arena_bytes"] == 2560


def _project_with_store(folder) -> Path:
    path = write(folder, '[calibration]\ndata = "calib.npy"\n')
    (folder / ".mcudeploy").mkdir()
    return path


def test_corrupt_run_store_is_refused_and_left_untouched(folder, capsys, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    path = _project_with_store(folder)
    store = folder / ".mcudeploy" / "runs.sqlite"
    store.write_bytes(b"this is not a database" * 100)
    before = store.read_bytes()
    assert main(["deploy", str(path), "--quiet"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "not a readable run store" in error and "left untouched" in error
    assert store.read_bytes() == before and not (folder / "deploy").exists()   # no stage ran


def test_locked_run_store_is_a_clear_error_before_any_stage(folder, capsys, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    monkeypatch.setattr(stage_runs, "STORE_TIMEOUT_S", 0.2)
    path = _project_with_store(folder)
    store = folder / ".mcudeploy" / "runs.sqlite"
    from mcudeploy.runs import RunStore
    RunStore.open(store).close()                      # a real store
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")                 # another process writing
    try:
        assert main(["deploy", str(path), "--quiet"]) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "is locked by another process" in error
    assert not (folder / "deploy").exists()
    with RunStore.open(store) as opened:
        assert opened.list_runs() == []               # nothing half-written


def test_report_of_a_run_that_does_not_exist(folder, capsys, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    store = folder / "runs.sqlite"
    from mcudeploy.runs import RunStore
    RunStore.open(store).close()
    assert main(["report", "42", "--runs", str(store), "-o", str(folder / "r.html")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "run 42 is not in the run store" in error and not (folder / "r.html").exists()


def test_resume_needs_an_earlier_deploy(folder, capsys):
    path = write(folder, '[calibration]\ndata = "calib.npy"\n')
    assert main(["deploy", str(path), "--from", "search"]) == 2
    assert "--from search: no earlier deploy" in capsys.readouterr().err
    assert main(["deploy", str(path), "--from", "serch"]) == 2
    assert "serch" in capsys.readouterr().err


def test_quantized_model_that_does_not_fit_stops_at_search_with_exit_8(tmp_path, capsys):
    shutil.copy(shared_model("mlperf_tiny/resnet8_int8.tflite"), tmp_path / "model.tflite")
    path = write(tmp_path, '[deployment.target]\nname = "stm32h743"\n[deployment.memory]\nsram_limit = "16K"\n')
    assert main(["deploy", str(path), "--quiet", "--no-record"]) == 8
    out = capsys.readouterr().out
    assert re.search(r"quantize\s+skipped.*quantized already", out) and re.search(r"validate\s+skipped", out)
    assert re.search(r"search\s+failed.*step 'fast kernels'.*no step fits", out)
    assert "stopped: stage search failed (exit 8)" in out and (tmp_path / "deploy" / "report.html").is_file()
    state = json.loads((tmp_path / "deploy" / "deploy.json").read_text())
    assert [entry["status"] for entry in state["stages"]] == ["ok", "ok", "ok", "skipped", "skipped", "failed", "ok"]
