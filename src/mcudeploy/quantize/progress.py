"""Progress bars of the long loops over samples or layers (calibration, sensitivity,
validation, the per-layer comparison): description, bar, ``done/total``, elapsed time and
the estimated time left, on standard error, gone when the loop ends.

    with progress_bar("calibrating unet", total=100, unit="sample") as advance:
        for sample in samples:
            ...; advance()

Disabled (``enabled=False``, or standard error not a terminal, where rich draws nothing)
the bar costs nothing. ``rich`` is imported only when a bar is shown.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator


def _noop(steps: int = 1) -> None:
    return None


@contextmanager
def progress_bar(description: str, total: int, *, unit: str = "sample",
                 enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps (module docstring); yields ``advance(steps=1)``."""
    if not enabled or total <= 1 or not sys.stderr.isatty():
        yield _noop
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(f"{unit}s"),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)
