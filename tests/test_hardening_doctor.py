"""``mcudeploy doctor`` on hostile input (issue 26, findings 12 and 13): matching linear in
the input's size, standard input bounded, and no ESC / bidi character of a log, of standard
input or of an argument echoed to the terminal."""
from __future__ import annotations

import io
import sys
import time

import pytest

from mcudeploy.cli.main import main
from mcudeploy.doctor import diagnose

HOSTILE = "\x1b]0;owned\x07\x1b[2J\u202e"
KNOWN_LINE = "does not fit: SRAM by 1024 bytes"


def _fastest(text: str) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        diagnose(text)
        times.append(time.perf_counter() - started)
    return min(times)


def test_long_lines_are_matched_in_linear_time():
    """Lines of letters / digits retried from every position by ``[A-Z_0-9]+ '`` were
    quadratic in the line's length (160 KB: ~15 s). Measured as a ratio in this run, not as a
    wall-clock bound: lines 4x as long (as many characters in all) take about as long when the
    patterns are linear, 4x as long when they are quadratic."""
    def log(length: int) -> str:
        lines = ["A" * length, "1" * length, "a '" * (length // 3), "E103 " * (length // 5)]
        return "\n".join(lines * (40_000 // length))
    assert _fastest(log(4000)) < 2.5 * _fastest(log(1000))


def _unsafe(text: str) -> bool:
    return any(character in text for character in "\x1b\x07\u202e")


@pytest.mark.parametrize("known", [True, False], ids=["known", "unknown"])
def test_no_escape_from_a_log_an_argument_or_stdin(tmp_path, monkeypatch, capsys, known):
    line = (KNOWN_LINE if known else "something odd happened") + " " + HOSTILE
    log = tmp_path / "log.txt"
    log.write_text(f"{line}\n")
    for argv in (["doctor", str(log)], ["doctor", line]):
        assert main(argv) == (0 if known else 1)
        out, err = capsys.readouterr()
        assert not _unsafe(out + err), (argv, out)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode() + b"\n")))
    assert main(["doctor", "-"]) == (0 if known else 1)
    out, err = capsys.readouterr()
    assert not _unsafe(out + err) and ("1024" in out if known else True)


def test_standard_input_is_bounded(monkeypatch, capsys):
    from mcudeploy.doctor.evidence import MAX_LOG_BYTES

    endless = io.TextIOWrapper(io.BytesIO(b"x" * (MAX_LOG_BYTES + 10)))
    monkeypatch.setattr(sys, "stdin", endless)
    assert main(["doctor", "-"]) == 2
    err = capsys.readouterr().err
    assert "standard input: more than" in err and err.count("\n") == 1
    assert endless.buffer.tell() <= MAX_LOG_BYTES + 1       # it stopped reading at the limit


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_log_file_is_refused(tmp_path, capsys, special):
    import os

    path = tmp_path / "log.fifo"
    if special == "fifo":
        os.mkfifo(path)
    else:
        path = special
    assert main(["doctor", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a regular file" in err and str(path) in err


def test_report_html_drops_escapes_and_bidi_of_a_sweep_name_and_a_project_version():
    """Finding 12 (HTML): the sweep page and report.html kept ESC and bidi characters."""
    from mcudeploy.report.html import render_html
    from mcudeploy.runs.records import RunRecord

    name = f"sweep{HOSTILE}name"
    version = f"1.0{HOSTILE}"
    cells = [{"cell": 0, "status": "ok", "model": name, "target": "t", "option_set": "default",
              "latency_ms": 1.0, "on_chip_bytes": 10}]
    payload = {"sweep": {"sweep": {"name": name, "id": "abc", "cells": 1, "stages": ["plan"], "counts": {"ok": 1}},
                         "pareto": {"axes": [{"axis": "latency", "metric": "latency_ms", "better": "lower"},
                                             {"axis": "on-chip RAM", "metric": "on_chip_bytes", "better": "lower"}],
                                    "front": [0], "candidates": 1},
                         "cells": cells},
               "workflow": {"stages": [{"stage": "analyze", "status": "passed"}], "deploy": "d1",
                            "project": f"demo {version}", "row": {"project": "demo", "version": version}}}
    record = RunRecord(id=3, command="sweep", command_line=f"mcudeploy sweep {name}.toml", argv=[],
                       started_at="2026-01-01T00:00:00.000+00:00", status="ok", exit_code=0,
                       finished_at="2026-01-01T00:00:01.000+00:00", tags={"sweep": name, "version": version},
                       payload=payload)
    page = render_html(record)
    assert "sweep]0;owned[2Jname" in page          # shown as text, its ESC, BEL and U+202E dropped
    assert not _unsafe(page), [hex(ord(c)) for c in page if c in "\x1b\x07\u202e"][:5]
