"""Where commands write what they produce: one ``--json`` convention and checked paths.

Every ``--json`` takes a file or ``-`` for standard output, and ``--json`` alone means
standard output (:func:`add_json_argument`). Output paths are checked before any work
(:func:`check_outputs`, :func:`mcudeploy.safe_io.check_output_path`: no folder, no missing
folder, never a file the command reads) and written without losing the old file on failure
(:func:`emit`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable

from ..safe_io import check_output_path, write_text

STDOUT = "-"


def add_json_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", nargs="?", const=STDOUT, metavar="FILE",
                        help=f"write {what} as JSON to FILE ('-' or no FILE: standard output)")


def check_outputs(destinations: dict[str, str | Path | None], inputs: Iterable[str | Path | None]) -> None:
    """Check every ``option -> path`` that is given and not standard output."""
    readable = list(inputs)
    for option, destination in destinations.items():
        if destination is not None and str(destination) != STDOUT:
            check_output_path(destination, option, inputs=readable)


def emit(text: str, destination: str | Path, option: str) -> None:
    """Write ``text`` to ``destination`` (``-``: standard output)."""
    if str(destination) == STDOUT:
        sys.stdout.write(text)
    else:
        write_text(destination, text, option)


def to_stdout(*destinations: str | Path | None) -> bool:
    """Whether one of the outputs is standard output (then the console report is left out)."""
    return any(destination is not None and str(destination) == STDOUT for destination in destinations)
