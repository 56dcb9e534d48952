"""Live progress of a sweep on standard error: cells done / failed / running, elapsed time, ETA.

    with SweepProgress(name, total=24, resumed=6, enabled=True) as progress:
        progress.running(2); progress.finished(cell, result)

On a terminal, one rich bar (``12/24 done, 1 failed, 2 running``, the time left from the rate
so far), with a line printed above it for each failed cell. Elsewhere (a pipe, a CI log) or
with ``enabled=False`` nothing is drawn; each failed cell is a log warning and each finished
one an info line (``-v``).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..report.console import printable
from .cells import Cell
from .results import STATUS_OK, CellResult

if TYPE_CHECKING:
    from rich.progress import Progress

log = logging.getLogger("mcudeploy.sweep")


def describe(cell: Cell) -> str:
    return f"cell {cell.index} ({cell.model.label} on {cell.target_label}, {cell.option_set})"


class SweepProgress:
    def __init__(self, name: str, total: int, resumed: int = 0, enabled: bool = True):
        from rich.console import Console

        self.console = Console(stderr=True)
        self.total, self.done, self.failed, self.active = total, resumed, 0, 0
        self.live = enabled and self.console.is_terminal
        self.name = printable(name, one_line=True)
        self.bar: Progress | None = None

    def __enter__(self) -> "SweepProgress":
        if self.live:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("sweep {task.description}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total} done, {task.fields[failed]} failed, "
                                           "{task.fields[active]} running"), TimeElapsedColumn(),
                                TextColumn("ETA"), TimeRemainingColumn(), console=self.console, transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task(self.name, total=self.total, completed=self.done, failed=0, active=0)
        return self

    def __exit__(self, *exc_info) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc_info)

    def _refresh(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, failed=self.failed, active=self.active)

    def running(self, count: int) -> None:
        self.active = count
        self._refresh()

    def finished(self, cell: Cell, result: CellResult) -> None:
        self.done += 1
        if self.done >= self.total:
            self.active = 0
        if result.status != STATUS_OK:
            self.failed += 1
            text = f"{describe(cell)} {result.status}: {result.error}"
            if self.bar is not None:
                self.bar.console.print(printable(text, one_line=True), markup=False, highlight=False)
            else:
                log.warning("%s", text)
        log.info("%s %s in %.2f s (%d/%d)", describe(cell), result.status, result.seconds, self.done, self.total)
        self._refresh()
