"""Progress of long work, on standard error: a bar for loops of known length, a spinner for
one long step, both with the elapsed time; gone when the work ends.

    with progress_bar("calibrating unet", total=100, unit="sample") as advance:
        for sample in samples:
            ...; advance()
    with phase("compiling for mps2-an386"):
        ...

On a terminal (standard error is a TTY) rich draws the bar or spinner. Piped or in a CI log
nothing is drawn; instead each piece of work is an INFO log record when it starts and when it
ends, with its duration (shown with ``-v``). So a long command is never silent for a user who
asked for progress, and a pipe receives no control characters.

Only one bar or spinner is drawn at a time (rich allows one live display): work started
inside another is logged only. ``enabled=False`` (``deploy --quiet``, library callers) turns
the drawing off; the log records stay. ``rich`` is imported only when something is drawn.
"""
from __future__ import annotations

import logging
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterator

log = logging.getLogger("mcudeploy.progress")
_drawing = False   # a bar or spinner is on the screen (rich's one live display)


def _noop(steps: int = 1) -> None:
    return None


def _draws(enabled: bool) -> bool:
    return enabled and not _drawing and sys.stderr.isatty()


@contextmanager
def _logged(description: str) -> Iterator[None]:
    """INFO records at the start and the end of the work, with its duration."""
    log.info("%s ...", description)
    start = time.perf_counter()
    yield
    log.info("%s: done in %.1f s", description, time.perf_counter() - start)


@contextmanager
def _live(progress) -> Iterator[None]:
    global _drawing
    _drawing = True
    try:
        with progress:
            yield
    finally:
        _drawing = False


@contextmanager
def progress_bar(description: str, total: int | None, *, unit: str = "sample",
                 enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps (``None``: a spinner with the elapsed time); yields
    ``advance(steps=1)`` (module docstring)."""
    with _logged(description if total is None else f"{description} ({total} {unit}s)"):
        if not _draws(enabled) or (total is not None and total <= 1):
            yield _noop
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if total is None:
            columns = [SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()]
        else:
            columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(f"{unit}s"),
                       TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
        progress = Progress(*columns, transient=True, console=Console(stderr=True))
        with _live(progress):
            task = progress.add_task(description, total=total)
            yield lambda steps=1: progress.advance(task, steps)


@contextmanager
def phase(description: str, *, enabled: bool = True) -> Iterator[None]:
    """One long step: a spinner with the elapsed time on a terminal, log records elsewhere."""
    with progress_bar(description, None, enabled=enabled):
        yield
