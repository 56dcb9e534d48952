"""``mcudeploy sweep SWEEP.toml``: a design-space sweep on this machine or on a Dask cluster.

    mcudeploy sweep SWEEP.toml [--scheduler tcp://HOST:8786 | --workers N] [--out RESULTS.json]
                    [--csv FILE] [--png PARETO.png] [--html REPORT.html] [--cells 3,7-9] [--retry-failed]
                    [--timeout S] [--retries N] [--list] [--no-progress]

The sweep file's format is in :mod:`mcudeploy.sweep.spec`. Every cell is one recorded run
(``sweep-cell``, tagged ``sweep=NAME``); the same command after an interruption runs only
the cells that have no finished run. Prints the cells (or, for a large sweep, the Pareto
front and the failures) and the front; ``--out`` / ``--csv`` hold every cell. Exit codes: 0
when every cell finished ok; 1 when some failed or timed out (each is recorded with its
error); 2 for a bad sweep file or option, or a scheduler that cannot be reached.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import McuDeployError, UsageError
from ..report.console import make_console
from ..runs.current import current_run
from ..runs.location import default_store_path
from ..sweep import SweepResult, SweepSettings, load_sweep, run_sweep
from ..sweep.results import NOT_MEASURED, STATUS_OK
from ..sweep.spec import MAX_RETRIES, MAX_TIMEOUT_S, max_local_workers
from .output import check_outputs, emit
from .recording import recording_disabled
from .registry import command

MAX_TABLE_ROWS = 40
PICTURE_SUFFIXES = (".png", ".svg", ".pdf")     # formats --png writes (matplotlib, by the name's suffix)
AXIS_COLUMNS = ("input_shapes", "quantization", "objective", "option_set")
PAYLOAD_ROWS = 5000


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", type=Path, metavar="SWEEP.toml", help="the sweep file (format: docs in "
                        "mcudeploy.sweep.spec; example: examples/sweep.toml)")
    cluster = parser.add_argument_group("where the cells run (Dask)")
    cluster.add_argument("--scheduler", metavar="tcp://HOST:8786",
                         help="an existing Dask scheduler (default: an in-process LocalCluster)")
    cluster.add_argument("--workers", type=int, metavar="N", help="local workers (default: one per core)")
    cluster.add_argument("--connect-timeout", type=float, default=5.0, metavar="S",
                         help="seconds to reach the scheduler and find a worker (default 5)")
    cells = parser.add_argument_group("cells")
    cells.add_argument("--cells", metavar="LIST", help="run only these cells, e.g. 3,7-9 (run even if recorded)")
    cells.add_argument("--retry-failed", action="store_true", help="run the recorded failed cells again")
    cells.add_argument("--timeout", type=float, metavar="S", help="seconds per cell (default: [sweep] timeout)")
    cells.add_argument("--retries", type=int, metavar="N", help="attempts after a lost worker (default: [sweep] retries)")
    cells.add_argument("--list", action="store_true", help="list the cells and which are recorded; run nothing")
    cells.add_argument("--no-progress", action="store_true", help="no live progress bar")
    results = parser.add_argument_group("results")
    results.add_argument("--out", dest="output", metavar="RESULTS.json", help="every cell as JSON ('-' = stdout)")
    results.add_argument("--csv", metavar="FILE", help="every cell as CSV ('-' = stdout)")
    results.add_argument("--png", metavar="FILE", help="the Pareto plot (latency vs on-chip RAM vs accuracy)")
    results.add_argument("--html", type=Path, metavar="FILE", help="the sweep run's HTML report (Pareto section)")


def _cell_selection(text: str | None) -> frozenset[int] | None:
    if text is None:
        return None
    chosen: set[int] = set()
    try:
        for part in filter(None, (p.strip() for p in text.split(","))):
            first, _, last = part.partition("-")
            chosen.update(range(int(first), int(last or first) + 1))
    except ValueError:
        raise UsageError(f"--cells {text!r}: give cell numbers and ranges, e.g. 3,7-9") from None
    if not chosen:
        raise UsageError(f"--cells {text!r}: no cell given")
    return frozenset(chosen)


def _settings(args: argparse.Namespace) -> SweepSettings:
    for option, value in (("--timeout", args.timeout), ("--connect-timeout", args.connect_timeout)):
        if value is not None and not 0 < value <= MAX_TIMEOUT_S:     # also NaN and inf
            raise UsageError(f"{option} {value:g}: give a number of seconds above 0 and at most "
                             f"{MAX_TIMEOUT_S:,.0f} (30 days)")
    if args.retries is not None and not 0 <= args.retries <= MAX_RETRIES:
        raise UsageError(f"--retries {args.retries}: give 0 to {MAX_RETRIES}")
    most = max_local_workers()
    if args.workers is not None and not 1 <= args.workers <= most:
        raise UsageError(f"--workers {args.workers}: give 1 to {most} (four per core of this machine: each worker "
                         "runs its cells in a process of its own)")
    store = None if recording_disabled(args) else (args.runs or default_store_path())
    return SweepSettings(scheduler=args.scheduler, workers=args.workers, connect_timeout=args.connect_timeout,
                         store=store, retry_failed=args.retry_failed, only=_cell_selection(args.cells),
                         progress=not args.no_progress, timeout=args.timeout, retries=args.retries)


@command("sweep", "Run a design-space sweep (models x targets x configurations) on this machine or a Dask "
         "cluster; one recorded run per cell, resumable", _arguments)
def run(args: argparse.Namespace) -> int:
    spec = load_sweep(args.sweep)            # runs no code (mcudeploy.sweep.callables)
    settings = _settings(args)
    _check_picture(args.png)
    check_outputs({"--out": args.output, "--csv": args.csv, "--png": args.png, "--html": args.html},
                  spec.input_files())
    if args.list:
        return _list(spec, settings)
    try:
        result = run_sweep(spec, settings)
    except KeyboardInterrupt:
        make_console(stderr=True).print("sweep interrupted: the finished cells are recorded; the same command "
                                        "resumes with the others", markup=False)
        raise
    _note(result)
    if not any(str(d) == "-" for d in (args.output, args.csv) if d is not None):
        _print(result)
    _write(result, args)
    failures = result.failures()
    if failures:
        timeouts = sum(r.status == "timeout" for r in failures)
        raise McuDeployError(f"sweep {spec.name}: {len(failures)} of {len(result.results)} cells did not finish ok "
                             f"({timeouts} timed out; first: cell {failures[0].cell}: {failures[0].error}); each is "
                             "recorded with its error")
    return 0


def _check_picture(path: str | None) -> None:
    """``--png``'s format comes from its suffix: an unknown one is refused before the sweep runs."""
    if path is not None and Path(path).suffix.lower() not in PICTURE_SUFFIXES:
        raise UsageError(f"--png {path}: give a picture file name ending in {', '.join(PICTURE_SUFFIXES)} "
                         "(the format follows the suffix), e.g. pareto.png")


def _note(result: SweepResult) -> None:
    """The sweep command's own run: tags, counts and the table (the HTML report's Pareto section)."""
    run = current_run()
    run.tag("sweep", result.spec.name)
    run.tag("sweep_id", result.sweep_id)
    counts = result.counts()
    run.figures({f"cells_{status}": count for status, count in counts.items()} | {
        "cells": len(result.results), "pareto_cells": len(result.front().front), "seconds": result.seconds})
    document = result.to_json()
    document["cells"] = document["cells"][:PAYLOAD_ROWS]
    run.payload_section("sweep", document)


def _text(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _print(result: SweepResult) -> None:
    from rich.table import Table

    console, counts, front = make_console(), result.counts(), result.front()
    console.print(f"sweep {result.spec.name} ({result.sweep_id}): {len(result.results)} cells on {result.cluster}: "
                  f"{counts['ok']} ok, {counts['failed']} failed, {counts['timeout']} timed out, {counts['resumed']} "
                  f"from the run store; {result.seconds:.1f} s", markup=False)
    rows = result.rows()
    shown = rows if len(rows) <= MAX_TABLE_ROWS else [
        row for row in rows if row["cell"] in set(front.front) or row["status"] != STATUS_OK]
    varying = [c for c in AXIS_COLUMNS if len({row[c] for row in rows}) > 1]
    columns = ["cell", "model", "target", *varying, "status", *result.spec.metrics]
    table = Table(box=None, header_style="bold", title=None if shown is rows else
                  f"Pareto front and failures ({len(shown)} of {len(rows)} cells; every cell: --out / --csv)")
    for name in columns + ["front"]:
        table.add_column(name, justify="right" if name in result.spec.metrics or name == "cell" else "left")
    for row in shown:
        table.add_row(*(_text(row.get(name)) for name in columns), "*" if row["cell"] in front.front else "")
    console.print(table)
    axes = ", ".join(f"{metric} ({'lower' if sense > 0 else 'higher'} is better)" for _, metric, sense in front.axes)
    missing = "".join(f"; {label}: {NOT_MEASURED}" for label in front.missing)
    console.print(f"Pareto front over {axes or 'nothing measured'}{missing}: cells "
                  f"{', '.join(map(str, front.front)) or 'none'} ('-' in the table: {NOT_MEASURED})", markup=False)
    for failure in result.failures()[:10]:
        console.print(f"cell {failure.cell} {failure.status}: {failure.error}", markup=False)


def _write(result: SweepResult, args: argparse.Namespace) -> None:
    if args.output is not None:
        emit(json.dumps(result.to_json(), indent=1) + "\n", args.output, "--out")
    if args.csv is not None:
        emit(result.csv_text(), args.csv, "--csv")
    if args.png is not None:
        from ..sweep.plot import write_pareto_png

        write_pareto_png(result, Path(args.png))


def _list(spec, settings: SweepSettings) -> int:
    from ..sweep.recording import CellRecorder
    from ..sweep.run import sweep_cells, sweep_identity

    cells = sweep_cells(spec, make_models=False)      # --list runs nothing: no generator either
    finished = {}
    if settings.store is not None and Path(settings.store).exists():
        recorder = CellRecorder(settings.store, spec, sweep_identity(spec, cells))
        finished = recorder.finished()
        recorder.close()
    console = make_console()
    console.print(f"sweep {spec.name} ({sweep_identity(spec, cells)}): {len(cells)} cells, stages "
                  f"{', '.join(spec.stages)}", markup=False)
    for cell in cells:
        record = finished.get(cell.config_hash)
        state = f"recorded {record.status} (run {record.id})" if record else cell.failure or "to run"
        values = ", ".join(f"{k}={v}" for k, v in cell.parameters().items() if k != "cell")
        console.print(f"{cell.index:5d}  {cell.config_hash[:12]}  {values}  [{state}]", markup=False)
    return 0
