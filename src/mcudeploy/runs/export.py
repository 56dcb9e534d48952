"""CSV export of runs: one row per run, its fields, then one column per figure name.

Columns: :data:`FIELD_COLUMNS`, then every figure name of any run (sorted), prefixed
``figure:``. Text cells that a spreadsheet would read as a formula (starting with
``= + - @``, a tab or a carriage return) get a leading apostrophe; numbers are written as
numbers. The CLI passes its own ``cell`` function
(:func:`mcudeploy.report.console.csv_cell`, which also removes terminal control and bidi
characters: ``runs export --csv -`` prints recorded paths and names to a terminal).
"""
from __future__ import annotations

import csv
import io
from typing import Any, Callable, Iterable

from .records import RunRecord

FIELD_COLUMNS = ("id", "started_at", "finished_at", "command", "status", "exit_code", "model_path",
                 "model_sha256", "target", "tool_version", "git_commit", "config_hash", "stage", "tags",
                 "warnings", "errors", "command_line")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet evaluates (module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _fields(record: RunRecord) -> dict[str, Any]:
    return {"id": record.id, "started_at": record.started_at, "finished_at": record.finished_at,
            "command": record.command, "status": record.status, "exit_code": record.exit_code,
            "model_path": record.model_path, "model_sha256": record.model_sha256, "target": record.target,
            "tool_version": record.tool_version, "git_commit": record.git_commit,
            "config_hash": record.config_hash, "stage": record.stage,
            "tags": ";".join(f"{k}={v}" if v else k for k, v in sorted(record.tags.items())),
            "warnings": len(record.warnings), "errors": " | ".join(record.errors),
            "command_line": record.command_line}


def to_csv(records: Iterable[RunRecord], cell: Callable[[Any], Any] = safe_cell) -> str:
    """The CSV text of ``records`` (module docstring); every cell passes through ``cell``."""
    records = list(records)
    figures = sorted({name for record in records for name in record.figures})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*FIELD_COLUMNS, *(f"figure:{name}" for name in figures)])
    for record in records:
        fields = _fields(record)
        writer.writerow([cell(safe_cell(fields[c])) for c in FIELD_COLUMNS]
                        + [cell(safe_cell(_number(record.figures.get(name)))) for name in figures])
    return out.getvalue()


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() and abs(value) < 2 ** 53 else value
