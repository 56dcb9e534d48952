"""Cross-validation of the board-latency model (:mod:`.latency_fit`): would the fit hold on a
board, or a model, it never saw?

    cross_validate(rows, "board" | "model") -> [Prediction]    one per row, each predicted by
                                                              the fit on every other group's rows

Leave-one-board-out groups rows by board, leave-one-model-out by model file. A row whose runtime
label no training row has (a library measured on one board only) is predicted with its
framework's mean, else the bare profile, as ``estimate`` would; ``Prediction.seen`` tells which,
and :func:`summary` reports the medians over all rows and over the rows whose library the
training rows measured (what a runtime profile promises), with the worst case of each.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from .latency_fit import Measurement, fit

GROUPINGS = {"board": lambda row: row.board, "model": lambda row: row.model.stem}


@dataclass(frozen=True)
class Prediction:
    row: Measurement
    group: str
    predicted_ms: float
    seen: bool                   # the training rows measured the row's runtime label

    @property
    def error(self) -> float:
        return self.predicted_ms / self.row.measured_ms - 1.0


def cross_validate(rows: list[Measurement], grouping: str, anonymous: bool = False) -> list[Prediction]:
    """``anonymous``: predict every held-out row as a library nobody named (the calibrated
    ``cmsis-nn`` profile: the training rows' mean scale, no class factors), the band of
    ``--runtime cmsis-nn``."""
    key = GROUPINGS[grouping]
    predictions = []
    for group in sorted({key(row) for row in rows}):
        training = [row for row in rows if key(row) != group]
        if not training:
            continue
        model = fit(training)
        labels = {row.label for row in training}
        predictions += [Prediction(row, group, model.predict(replace(row, label="") if anonymous else row),
                                   row.label in labels and not anonymous)
                        for row in rows if key(row) == group]
    return predictions


def summary(predictions: list[Prediction]) -> dict:
    """Median and worst absolute error, over all rows and over the rows of seen labels."""
    def stats(chosen: list[Prediction]) -> dict:
        if not chosen:
            return {"rows": 0, "median_abs_error": None, "worst_error": None, "worst": None}
        worst = max(chosen, key=lambda p: abs(p.error))
        return {"rows": len(chosen), "median_abs_error": statistics.median(abs(p.error) for p in chosen),
                "worst_error": worst.error,
                "worst": f"{worst.row.model.stem}, {worst.row.label}, {worst.row.board} (CSV line {worst.row.line})"}
    return {"all": stats(predictions), "seen": stats([p for p in predictions if p.seen])}


def label_errors(predictions: list[Prediction]) -> dict[str, dict]:
    """Per runtime label: median and worst absolute error of its seen rows (the band ``estimate`` prints)."""
    result = {}
    for label in sorted({p.row.label for p in predictions}):
        errors = [abs(p.error) for p in predictions if p.row.label == label and p.seen]
        if errors:
            result[label] = {"median": statistics.median(errors), "worst": max(errors), "rows": len(errors)}
    return result
