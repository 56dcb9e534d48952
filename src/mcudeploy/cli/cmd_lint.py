"""``mcudeploy lint MODEL --target T``: deployment hazards of a model on a target.

Exit codes: 0 when no finding reaches ``--fail-on`` (default ``error``), 1 when one does;
an unreadable model or target exits with its error's code (2-7, see ``mcudeploy.errors``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..importers import load_model
from ..lint import RULES, lint_graph
from ..lint.render import print_report, to_json
from ..targets import load_memory_pools, load_target
from .cmd_analyze import add_model_arguments, input_shapes_from
from .registry import command


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """``--target``, ``--memory-pools`` and ``--cpu``, shared by commands that map a model."""
    parser.add_argument("--target", required=True, metavar="NAME|FILE.toml",
                        help="built-in target name (see 'mcudeploy targets') or a target file")
    parser.add_argument("--memory-pools", type=Path, metavar="FILE",
                        help="replace the target's memory regions by an ST .mpool / memory-pool "
                             "JSON file")
    parser.add_argument("--cpu", action="append", default=[], metavar="NODE",
                        help="force node NODE onto the CPU; repeatable")


def target_from(args: argparse.Namespace):
    target = load_target(args.target)
    if args.memory_pools is not None:
        target = target.with_regions(load_memory_pools(args.memory_pools), str(args.memory_pools))
    return target


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_target_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--fail-on", choices=("error", "warning", "info", "never"), default="error",
                        help="exit with 1 when a finding is at least this severe (default: error)")
    parser.add_argument("--rule", action="append", metavar="NAME", choices=sorted(RULES),
                        help="run only this rule; repeatable (rules: " + ", ".join(RULES) + ")")


@command("lint", "Find what will hurt a model on a target (NPU fallbacks, alignment, memory, ...)",
         _arguments)
def run(args: argparse.Namespace) -> int:
    target = target_from(args)
    graph = load_model(args.model, input_shapes=input_shapes_from(args))
    report = lint_graph(graph, target, force_cpu=args.cpu, rules=args.rule)
    if args.json:
        sys.stdout.write(to_json(report))
    else:
        print_report(report)
    return 1 if report.fails(args.fail_on) else 0
