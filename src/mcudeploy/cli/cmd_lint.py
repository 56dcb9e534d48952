"""``mcudeploy lint MODEL --target T``: deployment hazards of a model on a target.

Exit codes: 0 when no finding reaches ``--fail-on`` (default ``error``), 1 when one does;
an unreadable model or target exits with its error's code (2-7, see ``mcudeploy.errors``).
"""
from __future__ import annotations

import argparse

from ..driver import deploy, load_graph
from ..lint import RULES, lint_deployment
from ..report.lint_render import print_report, to_json
from ..runs.capture import note_lint
from .cmd_analyze import add_model_arguments, input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .output import add_json_argument, check_outputs, emit, to_stdout
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_deployment_arguments(parser, target_required=True)
    add_json_argument(parser, "the findings and offload rates")
    parser.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default="error",
                        help="exit with 1 when a finding is at least this severe (default: error)")
    parser.add_argument("--rule", action="append", metavar="NAME", choices=sorted(RULES),
                        help="run only this rule; repeatable (rules: " + ", ".join(RULES) + ")")


@command("lint", "Find what will hurt a model on a target (NPU fallbacks, alignment, memory, ...)",
         _arguments)
def run(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json}, [args.model, args.config])
    source = load_graph(args.model, input_shapes=input_shapes_from(args))
    deployment = deploy(source, deployment_options(args))
    report = lint_deployment(deployment, source, rules=args.rule)
    note_lint(report)
    if args.json is not None:
        emit(to_json(report), args.json, "--json")
    if not to_stdout(args.json):
        print_report(report)
    return 1 if report.fails(args.fail_on) else 0
