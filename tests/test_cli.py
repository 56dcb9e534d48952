"""The command line: analyze on the bundled example, output formats, errors and exit codes."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcudeploy.cli.main import main

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "kws_cnn.onnx"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcudeploy", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120)


def test_analyze_example_prints_summary_and_layers():
    proc = run_cli("analyze", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    for text in ("MACC", "peak live", "stem/conv", "Softmax", "probabilities", "1x12"):
        assert text in proc.stdout


def test_analyze_json_and_csv_agree(tmp_path, capsys):
    json_path, csv_path = tmp_path / "a.json", tmp_path / "a.csv"
    assert main(["analyze", str(EXAMPLE), "--json", str(json_path), "--csv", str(csv_path)]) == 0
    data = json.loads(json_path.read_text())
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert len(rows) == data["node_count"] == len(data["layers"])
    assert sum(int(r["macc"]) for r in rows) == data["total_macc"] > 0
    assert data["inputs"][0] == {"name": "input", "dtype": "float32", "shape": [1, 1, 49, 10],
                                 "bytes": 1960, "layout": "NCHW", "scale": None,
                                 "zero_point": None, "quant_axis": None}
    assert data["format"] == "onnx" and len(data["sha256"]) == 64
    assert data["peak_live_bytes"] >= max(int(r["output_bytes"]) for r in rows)


def test_analyze_json_to_stdout_is_pure_json():
    proc = run_cli("analyze", str(EXAMPLE), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["graph_name"] == "kws_cnn"


def test_optimize_folds_batchnorm_and_keeps_macc_of_convs(tmp_path):
    plain, optimized = tmp_path / "p.json", tmp_path / "o.json"
    assert main(["analyze", str(EXAMPLE), "--json", str(plain)]) == 0
    assert main(["analyze", str(EXAMPLE), "--optimize", "--json", str(optimized)]) == 0
    before, after = json.loads(plain.read_text()), json.loads(optimized.read_text())
    assert "BatchNormalization" in before["op_counts"]
    assert "BatchNormalization" not in after["op_counts"]
    assert "Transpose" not in after["op_counts"] or after["op_counts"]["Transpose"] <= 2
    conv_macc = lambda d: sum(layer["macc"] for layer in d["layers"] if layer["op"] == "Conv")  # noqa: E731
    assert conv_macc(before) == conv_macc(after)


@pytest.mark.parametrize("args,code,message", [
    (["analyze", "no/such/model.onnx"], 2, "no such model file"),
    (["analyze", str(EXAMPLE), "--input-shape", "input=1,x"], 2, "--input-shape"),
    (["analyze", str(EXAMPLE), "--json", "/no/such/dir/a.json"], 2, "does not exist"),
])
def test_user_errors_exit_with_class_code_and_no_traceback(args, code, message):
    proc = run_cli(*args)
    assert proc.returncode == code
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("mcudeploy: error:")


def test_version_and_help():
    proc = run_cli("--help")
    assert proc.returncode == 0 and "analyze" in proc.stdout
    assert run_cli("--version").stdout.startswith("mcudeploy ")


def test_top_level_help_starts_with_init_and_deploy_and_lists_every_command():
    from mcudeploy.cli.commands import COMMANDS, HELP_ORDER
    assert sorted(HELP_ORDER) == sorted(COMMANDS)
    out = run_cli("--help").stdout
    listed = [line.split()[0] for line in out.split("COMMAND\n", 1)[1].split("options:")[0].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(HELP_ORDER)
    start = out.index("start here:")
    assert "mcudeploy init " in out[start:] and "mcudeploy deploy" in out[start:]
    used = {word for line in out[start:].splitlines() for word in line.split()[1:2]
            if line.strip().startswith("mcudeploy ")}
    assert used <= set(COMMANDS), used - set(COMMANDS)


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    lines = (REPO / "README.md").read_text().splitlines()
    fence = lines.index("```sh")
    install_and_run, install_and_test = lines[fence + 1], lines[fence + 2]
    assert lines[fence + 3] == "```"
    assert "mcudeploy analyze examples/" in install_and_run
    assert install_and_test in (REPO / ".ci" / "run").read_text()
    assert install_and_test.endswith("python3 -m pytest")     # nothing that overrides the pytest config


@pytest.mark.slow
def test_the_suites_slowest_20_tests_are_shown_by_the_readme_and_ci_command():
    """README's second command (= .ci/run) is a bare ``python3 -m pytest``: the slowest 20 tests
    come from ``--durations=20`` in pyproject's pytest ``addopts``, which every pytest run in the
    checkout reads (issue 27: the slowest tests were not shown)."""
    import tomllib
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--durations=20" in addopts.split()
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_plain_table.py", "-q", "-p", "no:cacheprovider",
                           "--noconftest"],   # conftest's OR-Tools import is not what is under test
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "slowest 20 durations" in proc.stdout
