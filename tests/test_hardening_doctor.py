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
LINEAR_BOUND_S = 3.0       # a hang check, not a speed goal: before the fix this log took ~15 s


def test_long_lines_are_matched_in_linear_time():
    """Lines of letters / digits retried from every position by ``[A-Z_0-9]+ '`` were
    quadratic in the line's length (160 KB: ~15 s)."""
    lines = ["A" * 4000, "1" * 4000, "a '" * 1333, "E103 " * 800]
    text = "\n".join(lines * 10)
    started = time.perf_counter()
    diagnose(text)
    assert time.perf_counter() - started < LINEAR_BOUND_S


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
