"""Terminal renderings of runs: the list, one run, and the difference of two runs (rich).

The caller gives the console: the CLI's :func:`~mcudeploy.report.console.make_console`,
which reads no markup in strings (model, node and option values are user data); styles are
given as :class:`rich.text.Text` styles instead.
"""
from __future__ import annotations

from datetime import datetime
from typing import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .diff import RunDiff
from .records import RunRecord

# the figures `runs list` shows, first found first, at most LIST_FIGURES of them
KEY_FIGURES = ("arena_bytes", "flash_bytes", "fits", "latency_ms", "cosine", "top1", "accuracy",
               "offload_macc", "instructions", "macc", "peak_live_bytes", "files", "findings_error",
               "output_cosine")
LIST_FIGURES = 3
STATUS_STYLES = {"ok": "green", "failed": "bold red", "incomplete": "yellow"}


def figure_text(value: float | None) -> str:
    """``33312.0 -> '33,312'``, ``0.99912 -> '0.9991'``, ``None -> '-'``."""
    if value is None:
        return "-"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


def local_time(iso: str | None) -> str:
    if not iso:
        return "-"
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def duration_text(record: RunRecord) -> str:
    if not record.finished_at:
        return "-"
    seconds = (datetime.fromisoformat(record.finished_at) - datetime.fromisoformat(record.started_at)).total_seconds()
    return f"{seconds:.2f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def key_figures(record: RunRecord) -> str:
    shown = [name for name in KEY_FIGURES if name in record.figures][:LIST_FIGURES]
    return ", ".join(f"{name} {figure_text(record.figures[name])}" for name in shown)


def print_list(records: Iterable[RunRecord], store_path, console: Console) -> None:
    table = Table(title=f"runs in {store_path}")
    for column in ("id", "time", "command", "model", "target", "status", "figures"):
        table.add_column(column, justify="right" if column == "id" else "left")
    for record in records:
        status = Text(record.status + (f" ({record.exit_code})" if record.exit_code not in (0, None) else ""),
                      style=STATUS_STYLES.get(record.status, ""))
        command = f"{record.command} {record.stage}" if record.stage else record.command   # deploy: one run per stage
        table.add_row(str(record.id), local_time(record.started_at), command,
                      record.model_name or "-", record.target or "-", status, key_figures(record))
    console.print(table)


def print_run(record: RunRecord, console: Console) -> None:
    table = Table(title=f"run {record.id}", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    rows = [("command line", record.command_line), ("status", f"{record.status} (exit code {record.exit_code})"),
            ("started", local_time(record.started_at)), ("duration", duration_text(record)),
            ("model", f"{record.model_path or '-'}  sha256 {record.model_sha256 or '-'}"),
            ("target", record.target or "-"), ("stage", record.stage or "-"),
            ("tool version", record.tool_version), ("git commit", record.git_commit or "-"),
            ("working folder", record.working_dir or "-"), ("config hash", record.config_hash),
            ("tags", ", ".join(f"{k}={v}" if v else k for k, v in record.tags.items()) or "-")]
    for name, value in rows:
        table.add_row(name, str(value))
    console.print(table)
    _print_pairs(console, "figures", [(n, figure_text(v)) for n, v in record.figures.items()])
    _print_pairs(console, "configuration", [(k, str(v)) for k, v in sorted(record.config.items())])
    _print_pairs(console, "artefacts", [(a.path, f"{a.size} bytes  sha256 {a.sha256}") for a in record.artefacts])
    for kind, texts in (("warning", record.warnings), ("error", record.errors)):
        for text in texts:
            console.print(Text.assemble((f"{kind}: ", "yellow" if kind == "warning" else "bold red"), text))


def _print_pairs(console: Console, title: str, pairs: list[tuple[str, str]]) -> None:
    if not pairs:
        return
    table = Table(title=title)
    table.add_column("name")
    table.add_column("value", overflow="fold")
    for name, value in pairs:
        table.add_row(name, value)
    console.print(table)


def print_diff(diff: RunDiff, console: Console, show_all: bool = False) -> None:
    console.print(f"run {diff.old.id} ({diff.old.command}, {local_time(diff.old.started_at)}) -> "
                  f"run {diff.new.id} ({diff.new.command}, {local_time(diff.new.started_at)})")
    if diff.changes:
        changes = Table(title="what changed")
        for column in ("what", f"run {diff.old.id}", f"run {diff.new.id}"):
            changes.add_column(column, overflow="fold")
        for change in diff.changes:
            changes.add_row(change.what, _text(change.old), _text(change.new))
        console.print(changes)
    else:
        console.print("same inputs: command, model, tool version, target, git commit and configuration")
    moves = diff.moves if show_all else diff.moved
    if moves:
        figures = Table(title="figures" if show_all else "what moved")
        for column in ("figure", f"run {diff.old.id}", f"run {diff.new.id}", "change"):
            figures.add_column(column, justify="left" if column == "figure" else "right")
        for move in moves:
            relative = "" if move.relative is None else f" ({move.relative:+.1%})"
            delta = None if move.old is None or move.new is None else move.new - move.old
            change_text = "" if not move.moved or delta is None else \
                f"{'+' if delta > 0 else ''}{figure_text(delta)}{relative}"
            figures.add_row(move.name, figure_text(move.old), figure_text(move.new), change_text)
        console.print(figures)
    console.print(f"{len(diff.moved)} of {len(diff.moves)} figures moved"
                  + ("" if show_all else " (--all shows every figure)"))
    for change in diff.artefacts:
        console.print(f"artefact {change.what}: {_text(change.old)} -> {_text(change.new)}")


def _text(value) -> str:
    return "(absent)" if value is None else str(value)
