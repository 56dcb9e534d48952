"""``mcudeploy report RUN -o report.html``: the self-contained HTML report of a recorded run.

RUN is a run id, ``last`` or ``-N`` (see ``mcudeploy runs list``). The page has the run's
summary, figures, memory ledger and timeline, latency (or compute) breakdown, per-layer
table and error plot, and the search's trial log, each when the run recorded it
(:mod:`mcudeploy.report.html`). ``-o`` goes through the output guard
(:func:`mcudeploy.safe_io.check_output_path`: never the run store it reads); a missing store is
an error, never created. Exit codes: 0; an unknown run, a missing store or an unwritable
output folder: 2.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..report.html import write_html_report
from ..runs import RunStore, default_store_path
from ..safe_io import check_output_path
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN", help="run id, 'last', or -N (the N-th most recent)")
    parser.add_argument("-o", "--output", type=Path, default=Path("report.html"), metavar="FILE",
                        help="HTML file to write (default report.html)")
    parser.add_argument("--runs", type=Path, metavar="DB", help="run store (default: the one commands record into)")


@command("report", "Write the self-contained HTML report of a recorded run", _arguments)
def run(args: argparse.Namespace) -> int:
    path = args.runs or default_store_path()
    check_output_path(args.output, "-o", inputs=[path])
    with RunStore.open(path, create=False) as store:
        record = store.get(args.run_id, payload=True)
    write_html_report(record, args.output)
    print(f"report of run {record.id} ({record.command}) written to {args.output}")
    return 0
