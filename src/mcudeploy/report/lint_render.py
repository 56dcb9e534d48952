"""Renderings of a :class:`~mcudeploy.lint.LintReport`: a rich terminal table and JSON
(stable key order; ``findings`` in report order; offload rates as fractions in [0, 1])."""
from __future__ import annotations

import dataclasses
import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..lint import LintReport
from .console import make_console, printable

STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def to_dict(report: LintReport) -> dict[str, Any]:
    mapping = report.mapping
    return {
        "model": report.model,
        "target": report.target.name,
        "offload": {
            "npu": report.target.npu.name if report.target.npu else None,
            "npu_nodes": len(mapping.on("npu")),
            "nodes": len(mapping.placements),
            "node_rate": round(mapping.node_rate, 6),
            "npu_macc": mapping.npu_macc,
            "total_macc": mapping.total_macc,
            "macc_rate": round(mapping.macc_rate, 6),
        },
        "counts": {severity: report.count(severity) for severity in ("error", "warning", "info")},
        "findings": [dataclasses.asdict(finding) for finding in report.findings],
    }


def to_json(report: LintReport) -> str:
    return json.dumps(to_dict(report), indent=2) + "\n"


def print_report(report: LintReport, console: Console | None = None) -> None:
    console = console or make_console()
    mapping, target = report.mapping, report.target
    console.print(f"[bold]mcudeploy lint[/bold] {escape(report.model)} on "
                  f"[bold]{escape(target.name)}[/bold]", markup=True)
    if target.npu is not None:
        console.print(f"NPU offload: {len(mapping.on('npu'))}/{len(mapping.placements)} nodes "
                      f"({mapping.node_rate:.0%}), {mapping.npu_macc}/{mapping.total_macc} MACC "
                      f"({mapping.macc_rate:.0%})")
    if not report.findings:
        console.print("[green]no findings[/green]", markup=True)
        return
    table = Table(show_lines=True)
    for column in ("severity", "rule", "where", "finding", "fix"):
        table.add_column(column, overflow="fold")
    for finding in report.findings:
        table.add_row(Text(finding.severity, style=STYLES[finding.severity]), finding.rule,
                      printable(finding.node or "(model)"),
                      Text.assemble(printable(finding.message), "\n",
                                    (f"why: {printable(finding.why)}", "dim")),
                      printable(finding.fix))
    console.print(table)
    console.print(", ".join(f"{report.count(s)} {s}(s)" for s in ("error", "warning", "info")))
