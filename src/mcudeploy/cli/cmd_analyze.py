"""``mcudeploy analyze MODEL``: summary and per-layer table of a model (like ``stedgeai analyze``)."""
from __future__ import annotations

import argparse
import sys

from ..driver import load_graph
from ..report.analysis import analyze_graph
from ..report.render import print_report, to_csv, to_json
from ..runs.capture import note_analysis
from ..safe_io import check_output_path, write_text
from .model_arguments import add_model_arguments, input_shapes_from
from .registry import command

__all__ = ["add_model_arguments", "input_shapes_from", "run"]


def _write(text: str, destination: str, option: str) -> None:
    if destination == "-":
        sys.stdout.write(text)
        return
    write_text(destination, text, option)


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--optimize", action="store_true",
                        help="analyze after the cleanup pipeline (BN folding, activation fusion, "
                             "NHWC layout) instead of the graph as imported")
    parser.add_argument("--json", metavar="FILE", help="write the full analysis as JSON ('-' = stdout)")
    parser.add_argument("--csv", metavar="FILE", help="write the per-layer table as CSV ('-' = stdout)")


@command("analyze", "Summarise a model: I/O, MACC, parameters, weights, activations, per-layer table",
         _arguments)
def run(args: argparse.Namespace) -> int:
    for option, destination in (("--json", args.json), ("--csv", args.csv)):
        if destination and destination != "-":
            check_output_path(destination, option, inputs=[args.model])
    graph = load_graph(args.model, input_shapes=input_shapes_from(args),
                             pipeline="cleanup" if args.optimize else "none")
    analysis = analyze_graph(graph)
    note_analysis(analysis)
    if args.json:
        _write(to_json(analysis), args.json, "--json")
    if args.csv:
        _write(to_csv(analysis), args.csv, "--csv")
    if not (args.json == "-" or args.csv == "-"):
        print_report(analysis)
    return 0
