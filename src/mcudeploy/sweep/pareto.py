"""The Pareto front of a sweep over latency, on-chip RAM and accuracy - the axes that were measured.

    front = pareto_front(rows)      # rows: SweepResult.rows()

Axes, each the first of its metrics that at least one cell measured:

    latency       latency_ms, else search_latency_ms          smaller is better
    on-chip RAM   on_chip_bytes, else search_on_chip_bytes    smaller is better
    accuracy      accuracy (top-1 with labels), else cosine   larger is better

An axis no cell measured is "not measured" and left out. Candidates are the cells that
finished (status ok), fit (``fits`` is not 0 when the plan ran) and measured every axis
kept. Cell ``a`` dominates ``b`` when it is no worse on every axis and better on one; the
front is the candidates no other candidate dominates (equal cells are all on it), listed by
the first axis, then the others.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

AXES: tuple[tuple[str, tuple[str, ...], int], ...] = (       # label, metrics, +1 minimise / -1 maximise
    ("latency", ("latency_ms", "search_latency_ms"), 1),
    ("on-chip RAM", ("on_chip_bytes", "search_on_chip_bytes"), 1),
    ("accuracy", ("accuracy", "cosine"), -1),
)
CHUNK = 512


@dataclass
class ParetoFront:
    axes: list[tuple[str, str, int]]             # (label, metric, sense) of the measured axes
    missing: list[str]                           # labels of the axes nobody measured
    front: list[int] = field(default_factory=list)        # cell indices on the front
    candidates: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"axes": [{"axis": label, "metric": metric, "better": "lower" if sense > 0 else "higher"}
                         for label, metric, sense in self.axes],
                "not_measured": list(self.missing), "candidates": self.candidates, "front": list(self.front)}


def _measured(rows: list[dict[str, Any]]) -> tuple[list[tuple[str, str, int]], list[str]]:
    axes, missing = [], []
    for label, metrics, sense in AXES:
        metric = next((m for m in metrics if any(row.get(m) is not None for row in rows)), None)
        if metric is None:
            missing.append(label)
        else:
            axes.append((label, metric, sense))
    return axes, missing


def non_dominated(points: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``points`` (smaller is better on every column) no other row dominates."""
    keep = np.ones(len(points), dtype=bool)
    for start in range(0, len(points), CHUNK):
        block = points[start:start + CHUNK]
        no_worse = (points[None, :, :] <= block[:, None, :]).all(axis=2)
        better = (points[None, :, :] < block[:, None, :]).any(axis=2)
        # numpy's hints type .all(axis=2) / .any(axis=2) of an array as possibly a scalar
        keep[start:start + CHUNK] = ~(no_worse & better).any(axis=1)  # type: ignore[call-overload]
    return keep


def pareto_front(rows: list[dict[str, Any]]) -> ParetoFront:
    """The front of ``rows`` (module docstring)."""
    axes, missing = _measured(rows)
    result = ParetoFront(axes, missing)
    if not axes:
        return result
    candidates = [row for row in rows if row.get("status") == "ok" and row.get("fits") != 0
                  and all(row.get(metric) is not None for _, metric, _ in axes)]
    result.candidates = len(candidates)
    if not candidates:
        return result
    points = np.array([[sense * float(row[metric]) for _, metric, sense in axes] for row in candidates])
    keep = non_dominated(points)
    chosen = sorted((tuple(points[i]) + (candidates[i]["cell"],) for i in np.flatnonzero(keep)))
    result.front = [int(item[-1]) for item in chosen]
    return result
