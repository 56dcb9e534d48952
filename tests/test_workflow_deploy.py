"""``mcudeploy init`` + ``mcudeploy deploy`` end to end, as a user runs them: in a fresh folder
holding only the float model and data, through the installed command. Every stage runs and
is recorded as one run; the HTML report summarises them; a second deploy with one changed
option differs, in ``runs diff``, by exactly that option and the figures it moved; a failed
stage stops the deploy with its exit code and a report; ``--from`` resumes."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.runs import RunStore
from mcudeploy.workflow import STAGES
from test_codegen_qemu import HAVE_TOOLCHAIN
from test_report_html import layout_problems, open_in_browser


def cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("MCUDEPLOY_NO_RECORD", "MCUDEPLOY_RUNS")}
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True, cwd=folder,
                          timeout=600, env=env)


def set_keys(project: Path, section: str, **values) -> None:
    """Set keys of ``[section]`` (uncommenting them): the way a user edits the written file."""
    text = project.read_text()
    start = text.index(f"[{section}]\n")
    end = text.find("\n[", start + 1)
    end = len(text) if end < 0 else end
    body = text[start:end]
    for key, value in values.items():
        rendered = json.dumps(value) if not isinstance(value, bool) else str(value).lower()
        body, count = re.subn(rf"^# {key} = .*$|^{key} = .*$", f"{key} = {rendered}", body, count=1, flags=re.M)
        assert count == 1, key
    project.write_text(text[:start] + body + text[end:])


def store_runs(folder: Path):
    with RunStore.open(folder / ".mcudeploy" / "runs.sqlite") as store:
        return store.list_runs()


def fresh_folder(tmp_path: Path, model: str, samples: dict[str, tuple]) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(shared_model(model), folder / Path(model).name)
    rng = np.random.default_rng(5)
    for name, shape in samples.items():
        np.save(folder / name, rng.uniform(0.0, 1.0, shape).astype(np.float32))
    return folder


@pytest.mark.slow
def test_init_deploy_one_run_per_stage_then_diff_one_option(tmp_path):
    folder = fresh_folder(tmp_path, "mlperf_tiny/resnet8_float.tflite",
                          {"calib.npy": (8, 32, 32, 3), "val.npy": (8, 32, 32, 3)})
    init = cli(folder, "init", "resnet8_float.tflite", "--target", "stm32h743", "--calib", "calib.npy",
               "--data", "val.npy")
    assert init.returncode == 0, init.stderr
    project = folder / "mcudeploy.toml"
    # random inputs: the thresholds of this test are loose (the workflow is under test, not the quantizer)
    set_keys(project, "validation", samples=8, cosine_min=0.9, top1_min=0.5, code_samples=1)
    set_keys(project, "generate", test_vectors=1)
    started = time.perf_counter()
    first = cli(folder, "deploy", "--quiet")
    seconds = time.perf_counter() - started
    assert first.returncode == 0, first.stdout + first.stderr
    print(f"deploy of resnet8_float: {seconds:.1f} s")
    runs = store_runs(folder)
    assert [run.stage for run in runs] == list(STAGES)                       # one run per stage
    assert {run.command for run in runs} == {"deploy"} and {run.status for run in runs} == {"ok"}
    assert {run.tags["deploy"] for run in runs} == {str(runs[0].id)}
    report_run = runs[-1]
    for name in ("arena_bytes", "flash_bytes", "latency_ms", "top1", "cosine"):
        assert name in report_run.figures
    verify = runs[STAGES.index("verify")]
    assert verify.figures["bit_exact_host"] == 1
    if HAVE_TOOLCHAIN:
        assert verify.figures["bit_exact_qemu_m4"] == 1 and verify.figures["instructions"] > 1000
    else:
        assert any("qemu-m4 skipped" in text for text in verify.warnings)
    page = (folder / "deploy" / "report.html").read_text()
    assert "Deployment stages" in page and all(f"<td data-sort=\"{stage}\"" in page for stage in STAGES)
    # the per-layer error plot (from a few samples when validation passes) and agreement named as such
    assert 'aria-label="per-layer quantization error"' in page and "top-1 agreement" in page
    assert "(the stages of deploy " in page and "duration</dt><dd>0.00 s" not in page
    # as a browser lays it out at 1280 px: nothing wider than the window (the layers and lint
    # tables scroll in their own block), no clipped or overlapping label, the error plot drawn
    dom, console = open_in_browser(folder / "deploy" / "report.html", tmp_path, "--dump-dom", "--window-size=1280,2000")
    assert console == [] and layout_problems(dom) == (0, "")
    assert re.search(r'<svg[^>]*aria-label="per-layer quantization error".*?<polyline', dom, re.S)
    for name in ("deployment.toml", "fallback.toml", "passed.toml", "deploy.json", "resnet8_float_int8.onnx",
                 "firmware/network.c", "firmware/test_vectors.c"):
        assert (folder / "deploy" / name).exists(), name
    assert "results: model version" in first.stdout

    set_keys(project, "deployment.schedule", reuse=False)
    second = cli(folder, "deploy", "--quiet")
    assert second.returncode == 0, second.stdout + second.stderr
    new_report = store_runs(folder)[-1]
    assert new_report.stage == "report" and new_report.id == report_run.id + len(STAGES)
    diff = cli(folder, "runs", "diff", str(report_run.id), str(new_report.id), "--json")
    assert diff.returncode == 0, diff.stderr
    difference = json.loads(diff.stdout)
    assert difference["changes"] == [{"what": "config.deployment.reuse", "old": True, "new": False}]
    moved = {figure["name"]: figure for figure in difference["figures"] if figure["moved"]}
    assert set(moved) == {"arena_bytes"} and moved["arena_bytes"]["new"] > moved["arena_bytes"]["old"]
    text = cli(folder, "runs", "diff", str(report_run.id), str(new_report.id)).stdout
    assert "config.deployment.reuse" in text and "arena_bytes" in text and "1 of" in text


@pytest.mark.slow
def test_failed_stage_stops_with_its_code_then_resume(tmp_path):
    folder = fresh_folder(tmp_path, "mlperf_tiny/fc_autoencoder_float.tflite", {"calib.npy": (8, 640)})
    assert cli(folder, "init", "fc_autoencoder_float.tflite", "--calib", "calib.npy").returncode == 0
    project = folder / "mcudeploy.toml"
    set_keys(project, "validation", samples=4, cosine_min=1.0, code=["host"], code_samples=1)
    set_keys(project, "generate", test_vectors=0)
    failed = cli(folder, "deploy", "--quiet")
    assert failed.returncode == 9, failed.stdout + failed.stderr              # validation FAILED
    assert "stopped: stage validate failed (exit 9)" in failed.stdout and "fall back to" in failed.stdout
    runs = store_runs(folder)
    assert [run.stage for run in runs] == ["analyze", "lint", "feasibility", "quantize", "validate", "report"]
    assert runs[STAGES.index("validate")].status == "failed" and runs[-1].status == "ok"
    assert 0.0 < runs[-1].figures["cosine"] < 1.0       # the results row keeps what the failed validate measured
    assert runs[STAGES.index("lint")].tags["status"] == "skipped"            # no target: lint skipped, recorded
    assert "Stopped at stage validate" in (folder / "deploy" / "report.html").read_text()

    set_keys(project, "validation", cosine_min=0.9)
    resumed = cli(folder, "deploy", "--quiet", "--from", "validate")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    new = store_runs(folder)[len(runs):]
    assert [run.stage for run in new] == ["validate", "search", "generate", "verify", "report"]
    assert {run.tags.get("resumed_from") for run in new} == {runs[0].tags["deploy"]}
    state = json.loads((folder / "deploy" / "deploy.json").read_text())
    reused = {entry["stage"]: entry["reused_from"] for entry in state["stages"]}
    assert reused["quantize"] == runs[0].tags["deploy"] and reused["verify"] is None
    assert "settings changed since deploy" in resumed.stderr and "validation.cosine_min" in resumed.stderr
