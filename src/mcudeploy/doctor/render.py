"""Renderings of the doctor's diagnoses: terminal text and JSON."""
from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from ..report.console import make_console, printable
from .diagnose import Diagnosis
from .evidence import Evidence

UNKNOWN_ADVICE = ("Run the failing command again with -v (or -vv for every detail) and give the doctor its "
                  "whole log: mcudeploy -v COMMAND ... 2> log.txt; mcudeploy doctor log.txt")


def unknown_text(evidence: Evidence, known: int) -> str:
    return (f"doctor does not know this failure: none of its {known} known symptoms matches {evidence.label}. "
            + UNKNOWN_ADVICE)


def print_diagnoses(evidence: Evidence, diagnoses: list[Diagnosis], known: int,
                    console: Console | None = None) -> None:
    console = console or make_console()
    if not diagnoses:
        console.print(printable(unknown_text(evidence, known), one_line=True))
        return
    console.print(f"doctor: {printable(evidence.label, one_line=True)}: {len(diagnoses)} known problem(s)")
    for number, diagnosis in enumerate(diagnoses, start=1):
        console.print(Text.assemble((f"{number}. {diagnosis.entry.title}", "bold"), f"  [{diagnosis.entry.source}]"))
        where = "matched by the exit code" if diagnosis.matched_by == "exit code" else \
            f"line {diagnosis.line_number}" + (f" (and {diagnosis.occurrences - 1} more)" if diagnosis.occurrences > 1 else "")
        # Text.assemble bypasses the console's cleaning: the line and the values quoted from
        # the log are cleaned here, so no ESC / bidi character of a log reaches the terminal
        for label, text in ((where, diagnosis.line), ("cause", diagnosis.cause), ("fix", diagnosis.fix),
                            ("check", diagnosis.check)):
            console.print(Text.assemble((f"   {label}: ", "cyan"), printable(text, one_line=True)))


def to_json(evidence: Evidence, diagnoses: list[Diagnosis], known: int) -> str:
    document = {"evidence": evidence.label, "run": evidence.run_id, "exit_code": evidence.exit_code,
                "known": bool(diagnoses), "diagnoses": [d.to_dict() for d in diagnoses]}
    if not diagnoses:
        document["message"] = unknown_text(evidence, known)
    return json.dumps(document, indent=2) + "\n"
