"""Recording from the command line and ``mcudeploy runs list|show|diff|export``: every command
that computes something records its run, cheaply, and never fails because of the store."""
from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.cli.recording import record_command
from mcudeploy.runs import RunStore

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "kws_cnn.onnx"


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def runs_json(*args: str):
    proc = cli("runs", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_analyze_is_recorded_with_its_figures_and_artefacts(run_store, tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", str(EXAMPLE), "--json", str(out)]) == 0
    (run,) = runs_json("list")
    analysis = json.loads(out.read_text())
    assert (run["command"], run["status"], run["exit_code"]) == ("analyze", "ok", 0)
    assert run["figures"]["macc"] == analysis["total_macc"] and run["figures"]["nodes"] == analysis["node_count"]
    assert run["model_sha256"] == analysis["sha256"] and run["model_path"] == str(EXAMPLE)
    assert [a["path"] for a in run["artefacts"]] == [str(out)]
    assert run["git_commit"] is None or len(run["git_commit"]) == 40
    shown = runs_json("show", "last", "--payload")
    assert len(shown["payload"]["layers"]) == analysis["node_count"]
    assert shown["payload"]["layers"][0]["macc"] == analysis["layers"][0]["macc"]


def test_plan_that_does_not_fit_is_a_failed_run_and_diff_finds_what_moved(run_store, tmp_path):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    plan_json = tmp_path / "plan.json"
    assert main(["plan", str(model), "--target", "stm32h743", "--json", str(plan_json)]) == 0
    assert main(["plan", str(model), "--target", "stm32h743", "--sram-limit", "20K"]) == 8
    fitting, failing = runs_json("list")
    assert fitting["figures"]["arena_bytes"] == json.loads(plan_json.read_text())["arena_bytes"]
    assert fitting["figures"]["fits"] == 1 and failing["figures"]["fits"] == 0
    assert failing["status"] == "failed" and failing["exit_code"] == 8
    assert "does not fit" in failing["errors"][0] and any("dynamic batch" in w for w in failing["warnings"])
    over = sum(int(n) for n in re.findall(r"\w+ by (\d+) bytes", failing["errors"][0]))
    difference = runs_json("diff", str(fitting["id"]), str(failing["id"]))
    changes = {c["what"]: (c["old"], c["new"]) for c in difference["changes"]}
    assert changes["config.sram_limit"] == (None, "20K") and changes["exit_code"] == (0, 8)
    moved = {f["name"]: f for f in difference["figures"] if f["moved"]}
    assert moved["overflow_bytes"]["new"] == over > 0 and moved["fits"]["relative"] == -1.0
    text = cli("runs", "diff", "-2", "-1")
    assert text.returncode == 0 and "config.sram_limit" in text.stdout and f"{over:,}" in text.stdout


def test_list_show_and_export_on_the_terminal(run_store, tmp_path):
    for _ in range(2):
        assert main(["analyze", str(EXAMPLE), "--tag", "sweep=alpha", "--tag", "baseline"]) == 0
    assert runs_json("show", "last")["tags"] == {"sweep": "alpha", "baseline": ""}
    listing = cli("runs", "list")
    assert listing.returncode == 0 and listing.stdout.count("kws_cnn.onnx") == 2 and "macc 353,868" in listing.stdout
    assert "sha256" in cli("runs", "show", "1").stdout
    export = tmp_path / "runs.csv"
    assert main(["runs", "export", "--csv", str(export)]) == 0
    rows = list(csv.DictReader(export.open()))
    assert len(rows) == 2 and rows[1]["figure:macc"] == "353868" and rows[0]["tags"] == "baseline;sweep=alpha"


def test_no_record_switches_recording_off(run_store, monkeypatch):
    assert main(["analyze", str(EXAMPLE), "--no-record"]) == 0
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    assert main(["analyze", str(EXAMPLE)]) == 0
    assert not run_store.exists()


def test_default_store_is_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    proc = cli("analyze", str(EXAMPLE), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with RunStore.open(tmp_path / ".mcudeploy" / "runs.sqlite") as store:
        assert store.get("last").command == "analyze"


def test_a_broken_store_never_fails_a_command_and_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    broken = tmp_path / "runs.sqlite"
    broken.write_bytes(b"not a database " * 100)
    proc = cli("analyze", str(EXAMPLE), "--runs", str(broken))
    assert proc.returncode == 0 and "MACC" in proc.stdout
    assert proc.stderr.count("run not recorded") == 1 and str(broken) in proc.stderr
    assert broken.read_bytes() == b"not a database " * 100
    listing = cli("runs", "list", "--runs", str(broken))
    assert listing.returncode == 2 and listing.stderr.count("\n") == 1 and "Traceback" not in listing.stderr
    assert f"mcudeploy: error: {broken} is not a readable run store" in listing.stderr


@pytest.mark.parametrize("args, message", [
    (["runs", "show", "99"], "run 99 is not in the run store"),
    (["runs", "diff", "1", "99"], "run 99 is not in the run store"),
    (["report", "99", "-o", "r.html"], "run 99 is not in the run store"),
    (["runs", "show", "yesterday"], "'yesterday' is not a run id"),
    (["doctor", "42"], "run 42 is not in the run store"),
])
def test_unknown_run_ids_give_one_line_and_exit_code_2(run_store, tmp_path, args, message):
    assert main(["analyze", str(EXAMPLE)]) == 0
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("mcudeploy: error: ") and message in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_runs_without_a_store_say_so(tmp_path, monkeypatch):
    proc = cli("runs", "list", "--runs", str(tmp_path / "none.sqlite"))
    assert proc.returncode == 2 and "no run store at" in proc.stderr


def test_recording_around_a_command_writes_one_run_per_call(run_store):
    """The hook around a command that does nothing records every call (its cost, a few ms,
    is measured by benchmarks/pipeline_bench.py, not asserted here)."""
    args = argparse.Namespace(command="analyze", model=EXAMPLE, verbose=0, runs=None, no_record=False,
                              json=None, csv=None)
    for _ in range(31):
        assert record_command(args, ["analyze", str(EXAMPLE)], lambda: 0) == 0
    with RunStore.open(run_store) as store:
        assert len(store.list_runs()) == 31 == store.count_runs() and store.count_runs("plan") == 0
    listed = cli("runs", "list")
    assert "11 older run(s) not shown: --all shows every run" in listed.stdout
    assert "not shown" not in cli("runs", "list", "--all").stdout
    assert "30 older run(s) not shown" in cli("runs", "list", "--limit", "1").stdout


def test_plan_records_the_latency_it_prints(run_store, capsys):
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    assert main(["plan", str(model), "--target", "stm32h743"]) == 0
    printed = float(re.search(r"estimated latency ([0-9.]+) ms", capsys.readouterr().out).group(1))
    (run,) = runs_json("list")
    assert run["figures"]["latency_ms"] == pytest.approx(printed, rel=1e-3)
    shown = runs_json("show", "last", "--payload")
    assert shown["payload"]["latency"]["total_ms"] == pytest.approx(printed, rel=1e-3)
    assert sum(layer.get("estimated_ms", 0) for layer in shown["payload"]["layers"]) > 0


def test_the_dynamic_batch_note_is_recorded_not_printed(run_store, capsys):
    """Every export has a dynamic batch and an MCU runs batch 1: a note kept with the run and
    shown with -v, not a warning on every command (issue 27)."""
    model = shared_model("mlperf_tiny/resnet8_int8.tflite")
    assert main(["plan", str(model), "--target", "stm32h743"]) == 0
    assert "dynamic batch" not in capsys.readouterr().err
    (run,) = runs_json("list")
    assert any("dynamic batch dimension" in text for text in run["warnings"])
