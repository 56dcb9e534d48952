"""``mcudeploy doctor [LOG_FILE | RUN_ID | "error text" | -]``: explain a failure.

Looks the text up in the knowledge base (:mod:`mcudeploy.doctor`) and prints, for each
known problem, the line that shows it, the cause (with the numbers and names taken from the
text), the fix and the mcudeploy command that checks it. No argument: the most recent
recorded run. Exit codes: 0 when at least one known problem was found, 1 when the doctor
does not know (it says so, and how to get a fuller log), 2 for an unknown run id or an
unreadable file / run store.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..doctor import diagnose, gather, load_knowledge
from ..doctor.render import print_diagnoses, to_json
from .registry import command

DOES_NOT_KNOW = 1


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subject", nargs="?", metavar="LOG_FILE|RUN_ID|TEXT",
                        help="a log file, a recorded run (id, 'last', -N), the error text in quotes, or - "
                             "for standard input (default: the last recorded run)")
    parser.add_argument("--json", action="store_true", help="print the diagnoses as JSON")
    parser.add_argument("--runs", type=Path, metavar="DB", help="run store to look run ids up in")


@command("doctor", "Explain a failure: cause, fix and the check, from a log, a run or an error text",
         _arguments)
def run(args: argparse.Namespace) -> int:
    evidence = gather(args.subject, args.runs)
    known = len(load_knowledge())
    diagnoses = diagnose(evidence.text, evidence.exit_code)
    if args.json:
        sys.stdout.write(to_json(evidence, diagnoses, known))
    else:
        print_diagnoses(evidence, diagnoses, known)
    return 0 if diagnoses else DOES_NOT_KNOW
