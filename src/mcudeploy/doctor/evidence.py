"""What ``mcudeploy doctor`` is asked about: a log file, a recorded run, or a pasted text.

    gather(argument, store_path=None) -> Evidence

The argument is, in this order: ``-`` (read standard input, at most :data:`MAX_LOG_BYTES`
bytes: more is refused, save it to a file); an existing file (a log, read through
:mod:`mcudeploy.text_inputs`: a FIFO or a device is refused; its last :data:`MAX_LOG_BYTES`
bytes are read, undecodable bytes replaced); a run reference
(``12``, ``last``, ``-N``; the run's errors and warnings from the store); anything else is
the text itself. No argument means the most recent recorded run.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..text_inputs import read_stream, read_tail

MAX_LOG_BYTES = 8 << 20
_RUN_REFERENCE = re.compile(r"^(\d+|-\d+|last|latest)$", re.IGNORECASE)


@dataclass(frozen=True)
class Evidence:
    label: str                 # what was read, for the report's first line
    text: str
    exit_code: int | None = None
    run_id: int | None = None


def gather(argument: str | None, store_path: Path | None = None) -> Evidence:
    """The :class:`Evidence` ``argument`` names (module docstring)."""
    if argument == "-":
        data = read_stream(sys.stdin.buffer, "doctor -: standard input", MAX_LOG_BYTES)
        return Evidence("standard input", data.decode("utf-8", errors="replace"))
    if argument is not None and not _RUN_REFERENCE.match(argument.strip()) and _is_file(argument):
        return _log_file(Path(argument))
    if argument is None or _RUN_REFERENCE.match(argument.strip()):
        return _run(argument or "last", store_path)
    return Evidence("the text given", argument)


def _is_file(argument: str) -> bool:
    try:
        path = Path(argument)
        return len(argument) < 4096 and "\n" not in argument and path.exists() and not path.is_dir()
    except (OSError, ValueError):
        return False


def _log_file(path: Path) -> Evidence:
    data, size = read_tail(path, "doctor: log file", MAX_LOG_BYTES)
    cut = f" (last {MAX_LOG_BYTES >> 20} MiB)" if size > MAX_LOG_BYTES else ""
    return Evidence(f"log file {path}{cut}", data.decode("utf-8", errors="replace"))


def _run(reference: str, store_path: Path | None) -> Evidence:
    from ..runs import RunStore, default_store_path

    path = store_path or default_store_path()
    if not path.exists():
        raise UsageError(f"{reference!r}: no run store at {path} to look the run up in; give a log file, "
                         "the error text in quotes, or the store with --runs DB")
    with RunStore.open(path) as store:
        record = store.get(reference)
    text = "\n".join([*record.errors, *record.warnings])
    return Evidence(f"run {record.id} ({record.command_line}, {record.status})", text, record.exit_code, record.id)
