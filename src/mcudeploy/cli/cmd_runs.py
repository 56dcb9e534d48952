"""``mcudeploy runs list|show|diff|export``: the recorded runs (see :mod:`mcudeploy.runs`).

    mcudeploy runs list [--limit N | --all] [--command NAME] [--json]
    mcudeploy runs show ID [--json] [--payload]
    mcudeploy runs diff A B [--all] [--json]
    mcudeploy runs export --csv FILE|-

IDs: a number, ``last``, or ``-N`` (the N-th most recent; :mod:`mcudeploy.runs.ids`). Every
sub-command takes ``--runs DB`` (default: the store the other commands record into) and only
reads it: a missing store is an error, never created. ``export --csv FILE`` goes through the
output guard (:func:`mcudeploy.safe_io.check_output_path`: never the store itself, a folder or
a device); its cells carry no terminal control characters. Exit codes: 0; an unknown id or a
store that is not a readable run store: 2 (one line naming the file).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..report.console import csv_cell, make_console, printable
from ..runs import RunStore, default_store_path
from ..runs.diff import diff_runs
from ..runs.export import to_csv
from ..runs.render import print_diff, print_list, print_run
from ..safe_io import check_output_path, write_text
from .registry import command

DEFAULT_LIMIT = 20


def _store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=Path, metavar="DB",
                        help="run store (default: .mcudeploy/runs.sqlite beside the project file, "
                             "else in the current folder)")


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the recorded runs, most recent last")
    listing.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                         help=f"show the N most recent runs (default {DEFAULT_LIMIT})")
    listing.add_argument("--all", action="store_true", help="show every run")
    listing.add_argument("--command", dest="only_command", metavar="NAME", help="only runs of this command")
    listing.add_argument("--json", action="store_true", help="print the runs as JSON")
    show = actions.add_parser("show", help="everything recorded about one run")
    show.add_argument("id", metavar="ID", help="run id, 'last', or -N")
    show.add_argument("--json", action="store_true", help="print the run as JSON")
    show.add_argument("--payload", action="store_true", help="with --json: include the per-layer payload")
    diff = actions.add_parser("diff", help="what changed between two runs and which figures moved")
    diff.add_argument("old", metavar="A", help="the earlier run (id, 'last', -N)")
    diff.add_argument("new", metavar="B", help="the later run")
    diff.add_argument("--all", action="store_true", help="list every figure, not only those that moved")
    diff.add_argument("--json", action="store_true", help="print the difference as JSON")
    export = actions.add_parser("export", help="every run with its figures as columns")
    export.add_argument("--csv", required=True, metavar="FILE", help="CSV file to write ('-' = stdout)")
    for sub in (listing, show, diff, export):
        _store_option(sub)


@command("runs", "Recorded runs: list, show one, diff two, export as CSV", _arguments)
def run(args: argparse.Namespace) -> int:
    path = args.runs or default_store_path()
    if args.action == "export" and args.csv != "-":
        check_output_path(args.csv, "--csv", inputs=[path])
    with RunStore.open(path, create=False) as store:
        if args.action == "list":
            records = store.list_runs(None if args.all else max(args.limit, 0), args.only_command)
            if args.json:
                _print_json([record.to_dict(payload=False) for record in records])
            else:
                console = make_console()
                print_list(records, store.path, console)
                hidden = store.count_runs(args.only_command) - len(records)
                if hidden > 0:
                    console.print(f"{hidden} older run(s) not shown: --all shows every run, --limit N the N "
                                  "most recent", markup=False)
        elif args.action == "show":
            record = store.get(args.id, payload=args.payload)
            if args.json:
                _print_json(record.to_dict(payload=args.payload))
            else:
                print_run(record, make_console())
        elif args.action == "diff":
            difference = diff_runs(store.get(args.old), store.get(args.new))
            if args.json:
                _print_json(difference.to_dict())
            else:
                print_diff(difference, make_console(), show_all=args.all)
        else:
            _export(store, args.csv)
    return 0


def _print_json(data) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _export(store: RunStore, destination: str) -> None:
    text = to_csv(store.list_runs(), cell=csv_cell)
    if destination == "-":
        sys.stdout.write(text)
        return
    path = check_output_path(destination, "--csv", inputs=[store.path])
    write_text(path, text, "--csv")
    print(f"{text.count(chr(10)) - 1} runs written to {printable(path)}")
