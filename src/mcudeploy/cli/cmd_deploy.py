"""``mcudeploy deploy [mcudeploy.toml] [--from STAGE]``: the staged deployment of a project.

Runs analyze -> lint -> feasibility -> quantize -> validate -> search -> generate -> verify
-> report (:mod:`mcudeploy.workflow.runner`), one line per stage as it ends, each stage
recorded as one run (``mcudeploy runs list``; the runs share the tag ``deploy=<id>``), then
the results-table row and ``<output>/report.html``. ``--from STAGE`` resumes with the
earlier stages' results and artefacts of the latest deploy. A failed stage stops the deploy
with its reason (also as one ``mcudeploy: error:`` line on stderr) and the configuration to
fall back to.

Exit codes: 0 when every stage passed; the failed stage's code otherwise (8: does not fit,
9: validation or the generated code failed, 2-7: see :mod:`mcudeploy.errors`); a run store
that is locked, corrupt or not a store: 2, before any stage.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.text import Text

from ..errors import UsageError
from ..report.console import make_console, printable
from ..workflow.project import PROJECT_FILE, load_project
from ..workflow.records import FAILED, SKIPPED, STAGES, StageResult
from ..workflow.runner import run_deploy
from .recording import NO_RECORD_ENV
from .registry import command

STATUS_STYLES = {"ok": "green", FAILED: "bold red", SKIPPED: "yellow"}


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("project", nargs="?", type=Path, default=Path(PROJECT_FILE),
                        help=f"the project file (default {PROJECT_FILE}; 'mcudeploy init MODEL' writes one)")
    parser.add_argument("--from", dest="start", choices=STAGES, metavar="STAGE",
                        help=f"resume at STAGE with the earlier stages of the latest deploy ({', '.join(STAGES)})")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    group = parser.add_argument_group("run records")
    group.add_argument("--runs", type=Path, metavar="DB",
                       help="run store (default: .mcudeploy/runs.sqlite beside the project file)")
    group.add_argument("--no-record", action="store_true",
                       help=f"keep the stage runs in memory only (also: {NO_RECORD_ENV}=1)")
    group.add_argument("--tag", action="append", default=[], metavar="NAME[=VALUE]",
                       help="label every stage run, e.g. --tag baseline; repeatable")


def _tags(texts: list[str]) -> dict[str, str]:
    tags = {}
    for text in texts:
        name, _, value = text.partition("=")
        if not name.strip():
            raise UsageError(f"--tag {text!r}: give NAME or NAME=VALUE")
        tags[name.strip()] = value.strip()
    return tags


LINE_REASON = 200   # characters of a failure's reason on its stage line (the "stopped:" line has all)


def _printer(console):
    def print_stage(index: int, result: StageResult) -> None:
        text = result.summary if result.status == "ok" else (result.reason or result.summary)
        if result.status == FAILED and len(text) > LINE_REASON:
            text = text[:LINE_REASON] + " ..."
        line = Text.assemble(f"{index + 1:>2}/{len(STAGES)} {result.stage:<12}",
                             (f"{result.status:<8}", STATUS_STYLES.get(result.status, "")),
                             f"{result.seconds:6.1f} s  ",
                             "(reused) " if result.reused_from else "", text)
        console.print(line)
        for warning in result.notes[:3]:
            console.print(Text.assemble("                       ", ("warning: ", "yellow"), warning))
    return print_stage


@command("deploy", "Run the staged deployment of a project file: analyze ... verify, report; one run per stage",
         _arguments)
def run(args: argparse.Namespace) -> int:
    project = load_project(args.project)
    record = not args.no_record and os.environ.get(NO_RECORD_ENV, "") in ("", "0")
    console = make_console()
    target = project.deployment.target or "no target"
    console.print(f"deploy {project.path.name}: {project.model.name} on {target} -> {project.output}")
    outcome = run_deploy(project, start=args.start, argv=["deploy", *map(str, _argv(args))], record=record,
                         store_path=args.runs, tags=_tags(args.tag), progress=not args.quiet,
                         on_stage=_printer(console))
    report = outcome.results.get("report")
    if report is not None and report.status == "ok":
        console.print("results: " + "; ".join(f"{k} {v}" for k, v in report.details["row"].items()))
    if outcome.report is not None:
        console.print(f"report: {outcome.report}")
    runs = [r.run_id for r in outcome.results.values() if r.run_id is not None and not r.reused_from]
    if record and runs:
        console.print(f"deploy {outcome.deploy_id}: runs {min(runs)}-{max(runs)} (mcudeploy runs list)")
    failed = outcome.failed
    if failed is not None:
        console.print(Text.assemble(("stopped: ", "bold red"), f"stage {failed.stage} failed (exit "
                                    f"{failed.exit_code}): {failed.reason}"))
        console.print("fall back to " + (outcome.fallback or "nothing yet: no configuration has passed every stage"))
        print(f"mcudeploy: error: deploy stopped at stage {failed.stage} (exit {failed.exit_code}): "
              f"{printable(failed.reason, one_line=True)}", file=sys.stderr)
    return outcome.exit_code


def _argv(args: argparse.Namespace) -> list[str]:
    argv = [str(args.project)]
    if args.start:
        argv += ["--from", args.start]
    return argv
