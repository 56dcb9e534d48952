"""Progress bars of the long stages (rich), on standard error, gone when the stage ends.

    with progress_bar("validating", total=20, enabled=True) as advance:
        ...; advance()            # one step done
    total=None: an indeterminate bar (a pulse and the elapsed time)

Disabled (``enabled=False``, ``deploy --quiet``, or output that is not a terminal, where rich
draws nothing) the bar is a no-op.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def progress_bar(description: str, total: int | None, enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps (module docstring); yields ``advance(steps=1)``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("{task.description}"), BarColumn(),
               *([MofNCompleteColumn()] if total else []), TimeElapsedColumn()]
    with Progress(*columns, transient=True, disable=not enabled, console=Console(stderr=True)) as bar:
        task = bar.add_task(description, total=total)
        yield lambda steps=1: bar.advance(task, steps)
