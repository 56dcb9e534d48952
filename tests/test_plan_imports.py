"""``mcudeploy plan`` imports what it runs and nothing else (its start-up is most of its time:
issue 8's goal is a plan faster than Vela's whole compile), and the CLI's start-up garbage
collection pause (cli/main.py) always hands the collector back.

A fresh process plans a shared MLPerf Tiny model with recording off and lists sys.modules;
none of the format libraries, other commands' stages, the memory transformations that were
not asked for, or rich (piped output is plain text) may be among them. Not a timing test."""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, shared_model
from mcudeploy.cli import main as cli_main

NOT_IMPORTED = [
    "tflite", "onnx", "onnxruntime", "ai_edge_litert", "tflite_micro", "matplotlib", "dask", "rich",
    "sqlite3", "numpy.typing",
    "mcudeploy.codegen", "mcudeploy.search", "mcudeploy.quantize", "mcudeploy.validate", "mcudeploy.lint",
    "mcudeploy.workflow", "mcudeploy.sweep", "mcudeploy.doctor", "mcudeploy.estimate.calibrate",
    "mcudeploy.exporters.tflm_offline", "mcudeploy.plan.tiling", "mcudeploy.plan.split",
    "mcudeploy.passes.tile_spatial", "mcudeploy.passes.split_channels", "mcudeploy.plan.minimalloc_csv",
    "mcudeploy.runs.live", "mcudeploy.runs.store", "mcudeploy.report.render", "mcudeploy.report.analysis",
]

SCRIPT = """
import contextlib, io, json, sys
from mcudeploy.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["plan", sys.argv[1], "--target", "stm32h743"])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "ledger": "memory ledger" in out.getvalue()}))
"""


@pytest.mark.parametrize("model", ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/mobilenetv1_vww_int8.tflite"])
def test_plan_imports_only_what_it_runs(model):
    env = {**os.environ, "MCUDEPLOY_NO_RECORD": "1", "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(shared_model(model))], capture_output=True,
                            text=True, env=env, check=True)
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["code"] == 0 and report["ledger"]
    modules = set(report["modules"])
    assert "mcudeploy.plan.paired_greedy" in modules      # the listing is of a real plan
    imported = [name for name in NOT_IMPORTED if name in modules]
    assert imported == [], f"plan imported {imported}"


def test_start_up_pause_gives_the_collector_back(monkeypatch):
    monkeypatch.setattr(cli_main, "_start_up_done", False)
    assert gc.isenabled()
    with pytest.raises(SystemExit):
        cli_main.main(["--version"])
    assert gc.isenabled() and cli_main._start_up_done
    monkeypatch.setattr(cli_main, "_start_up_done", False)
    gc.disable()
    try:
        assert cli_main.main(["plan", "--no-such-option"]) == 2
        assert not gc.isenabled()          # the caller's choice stays
    finally:
        gc.enable()
