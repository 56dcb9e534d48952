"""What a sweep produced: one :class:`CellResult` per cell, and the :class:`SweepResult` table.

    result.rows()          # one dict per cell: its axis values, status, the kept metrics, error
    result.to_json()       # the ``--out`` document
    result.csv_text()      # the ``--csv`` table

Metrics are the figures the cell's run recorded (the same numbers a resumed sweep reads back
from the store); a metric the cell did not measure is ``None`` (``"not measured"`` in the
console and the reports). Integral values are written as integers.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from ..report.console import csv_cell
from .cells import Cell
from .pareto import ParetoFront, pareto_front
from .spec import SweepSpec

STATUS_OK, STATUS_FAILED, STATUS_TIMEOUT = "ok", "failed", "timeout"
STATUSES = (STATUS_OK, STATUS_FAILED, STATUS_TIMEOUT)
NOT_MEASURED = "not measured"


@dataclass
class CellResult:
    cell: int
    status: str                      # ok | failed | timeout
    exit_code: int = 0
    error: str | None = None
    figures: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    worker: str | None = None
    attempts: int = 1
    resumed: bool = False            # read back from the run store, not run again
    run_id: int | None = None


def number(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() and abs(value) < 2 ** 53 else float(value)


@dataclass
class SweepResult:
    spec: SweepSpec
    sweep_id: str
    cells: list[Cell]
    results: dict[int, CellResult]
    seconds: float = 0.0
    cluster: str = ""

    def counts(self) -> dict[str, int]:
        counts = {status: 0 for status in STATUSES}
        for result in self.results.values():
            counts[result.status] += 1
        counts["resumed"] = sum(result.resumed for result in self.results.values())
        return counts

    def failures(self) -> list[CellResult]:
        return [result for result in self.results.values() if result.status != STATUS_OK]

    def rows(self) -> list[dict[str, Any]]:
        rows = []
        for cell in self.cells:
            result = self.results.get(cell.index)
            if result is None:
                continue
            row = cell.parameters() | {"status": result.status}
            row.update({name: number(result.figures.get(name)) for name in self.spec.metrics})
            row.update(error=result.error, seconds=round(result.seconds, 3), run=result.run_id)
            rows.append(row)
        return rows

    def front(self) -> ParetoFront:
        return pareto_front(self.rows())

    def to_json(self) -> dict[str, Any]:
        front = self.front()
        return {"sweep": {"name": self.spec.name, "id": self.sweep_id, "file": str(self.spec.path),
                          "stages": list(self.spec.stages), "metrics": list(self.spec.metrics),
                          "cells": len(self.cells), "counts": self.counts(), "seconds": round(self.seconds, 3),
                          "cluster": self.cluster},
                "pareto": front.to_json(), "cells": self.rows()}

    def csv_text(self) -> str:
        rows = self.rows()
        out = io.StringIO()
        if rows:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n", extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow({key: csv_cell("" if value is None else value) for key, value in row.items()})
        return out.getvalue()
