"""The command line as a boundary (issue 16): argparse mistakes are one ``mcudeploy:
error:`` line with exit code 2 (``--help`` still prints usage); names from model files
reach the console, CSV cells and log records without markup, terminal escapes or bidi
controls; bad option values are usage errors."""
from __future__ import annotations

import csv
import io
import logging
import random

import numpy as np
import pytest

import fuzz_models
from mcudeploy.cli.main import main
from mcudeploy.report.console import PrintableFormatter, csv_cell, make_console, printable
from onnx_builders import save

HOSTILE = "[bold]x[/] \x1b[31mred\x1b]0;title\x07 a\u202eb :smile:"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    save(fuzz_models.onnx_conv_net(random.Random(0)), tmp_path, "m.onnx")
    return tmp_path


@pytest.mark.parametrize("argv, words", [
    (["plan", "m.onnx", "--seed", "x"], "plan: argument --seed: invalid int value"),
    (["analyze"], "analyze: the following arguments are required: model"),
    (["nosuch"], "invalid choice"), (["analyze", "m.onnx", "--bogus"], "unrecognized arguments"),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--seed", "-1"], "--seed -1"),
    (["validate", "m.onnx", "--quantized", "m.onnx", "--cosine-min", "nan"], "--cosine-min nan"),
    (["plan", "m.onnx", "--time-limit", "nan"], "time_limit"),
    (["plan", "m.onnx", "--alignment", "0"], "alignment"),
    (["quantize", "m.onnx", "--calib", "m.onnx", "-o", "q.onnx", "--std", "0"], "--std"),
])
def test_usage_mistakes_are_one_line_with_exit_code_2(workspace, capsys, argv, words):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcudeploy: error: ") and words in lines[0], lines
    assert "usage:" not in captured.err


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["analyze", "--help"])
    assert exit_.value.code == 0 and "usage: mcudeploy analyze" in capsys.readouterr().out


def test_hostile_names_are_shown_as_text(workspace, capsys):
    model = fuzz_models.onnx_conv_net(random.Random(0))
    model.graph.node[0].name = HOSTILE
    save(model, workspace, "h.onnx")
    for argv in (["analyze", "h.onnx"], ["plan", "h.onnx"], ["lint", "h.onnx", "--target", "stm32h743"]):
        assert main(argv) in (0, 1)
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
        if argv[0] == "analyze":
            assert "[bold]x[/]" in out and ":smile:" in out    # markup and emoji codes as written


def test_printable_and_the_log_formatter():
    assert printable("a\x1b[2Jb\u202ec\x00d\x85e") == "a[2Jbcde"
    assert printable("one\ntwo\tthree", one_line=True) == "one two three"
    assert printable("x\udcff") == "x\\udcff"
    record = logging.LogRecord("m", logging.WARNING, "", 0, "node %s", ("\x1b[31mred",), None)
    assert "\x1b" not in PrintableFormatter("%(message)s").format(record)
    console = make_console(file=io.StringIO(), width=80)
    console.print("[/] and [bold]")                     # no MarkupError
    assert "[/] and [bold]" in console.file.getvalue()


@pytest.mark.parametrize("cell, expected", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("+1", "'+1"), ("-x", "'-x"), ("@SUM(A1)", "'@SUM(A1)"),
    ("plain", "plain"), (-5, -5), ("a\x1bb", "ab"),
])
def test_csv_cells_never_start_a_formula(cell, expected):
    assert csv_cell(cell) == expected


def test_analyze_csv_guards_formula_names(workspace):
    model = fuzz_models.onnx_conv_net(random.Random(0))
    model.graph.node[0].name = "=HYPERLINK(\"http://x\")"
    save(model, workspace, "f.onnx")
    assert main(["analyze", "f.onnx", "--csv", "out.csv"]) == 0
    rows = list(csv.DictReader((workspace / "out.csv").open()))
    assert rows[0]["name"].startswith("'=")


def test_quantize_accepts_what_run_accepts(workspace, capsys):
    data = np.random.default_rng(0).normal(size=(3, 1, 3, 8, 8))   # float64: cast, as run does
    np.save(workspace / "c.npy", data)
    assert main(["quantize", "m.onnx", "--calib", "c.npy", "-o", "q.onnx"]) == 0
    assert main(["run", "m.onnx", "--inputs", "c.npy", "-o", "o.npz"]) == 0
