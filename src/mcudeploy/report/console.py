"""The one place terminal output is configured.

On a terminal, rich uses the terminal's width. Piped output (a file, a CI log, ``| less``)
gets wide rows instead of rich's 80-column default, so tables stay one row per line and
names are not folded mid-word.
"""
from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 220


def make_console() -> Console:
    return Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
