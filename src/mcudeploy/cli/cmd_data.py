"""``mcudeploy data check FILE --model MODEL``: what a calibration / validation data file holds,
judged against the model's inputs (keys, shape and layout, dtype, value range, clipping,
assumed preprocessing; :mod:`mcudeploy.data_report`). The format itself: ``docs/data.md``.

Exit codes: 0 when ``run``, ``validate`` and ``quantize`` would accept the file; the data error
code (7) with one ``mcudeploy: error:`` line naming the first problem otherwise (the report is
printed first, every problem in it).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..data_files import read_arrays
from ..data_report import InputReport, check_data
from ..driver import load_graph
from ..errors import DataError
from ..report.console import printable
from .model_arguments import input_shapes_from
from .registry import command

PREPROCESSING = ("mcudeploy feeds a .npy / .npz exactly as stored: no scaling, no mean / std, no "
                 "layout change (an image folder given to quantize --calib is read with the "
                 "preprocessing its options declare: --image-scale, --mean, --std, --bgr, --layout)")


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="judge a .npy / .npz data file against a model's inputs",
                               description="Report the keys, shape and layout, dtype, value range and "
                                           "clipping of a data file against a model's inputs.")
    check.add_argument("data", type=Path, metavar="FILE", help="the .npy / .npz data file")
    check.add_argument("--model", required=True, type=Path, metavar="MODEL",
                       help="the model the data is for (.onnx / .tflite, float or quantized)")
    check.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                       help="fix the shape of input NAME (for dynamic dimensions); repeatable")


def _number(x: float) -> str:
    return f"{x:.4g}"


def _lines(report: InputReport) -> list[str]:
    lines = [f"input {report.name!r}: {report.model_type}"
             + (f" ({report.model_layout})" if report.model_layout else "")]
    if report.key is not None:
        key = repr(report.key) if report.key else "(a .npy array)"
        lines.append(f"  key        {key}: {report.data_dtype}{list(report.data_shape or ())}"
                     + (f", {report.samples} sample(s)" if report.samples is not None else ""))
    lines.append(f"  layout     {report.layout}")
    if report.value_range is not None:
        low, high, mean, std = report.value_range
        lines.append(f"  range      [{_number(low)}, {_number(high)}], mean {_number(mean)}, "
                     f"std {_number(std)}" + (f": {report.looks_like}" if report.looks_like else ""))
    if report.representable is not None:
        lo, hi = report.representable
        lines.append(f"  quantized  represents [{_number(lo)}, {_number(hi)}]; "
                     f"{report.clipped_share or 0.0:.2%} of the values saturate")
    lines += [f"  hint       {hint}" for hint in report.hints]
    lines += [f"  problem    {problem}" for problem in report.problems]
    return lines


@command("data", "Check a calibration / validation data file against a model: keys, layout, dtype, "
                 "value range, clipping, assumed preprocessing", _arguments)
def run(args: argparse.Namespace) -> int:
    graph = load_graph(args.model, input_shapes=input_shapes_from(args), pipeline="none")
    arrays = read_arrays(args.data)
    reports, problems = check_data(graph, arrays)
    print(printable(f"{args.data} for {args.model}"))
    for report in reports:
        for line in _lines(report):
            print(printable(line))
    for problem in problems:
        print(printable(f"problem    {problem}"))
    print(printable(f"preprocessing: {PREPROCESSING}"))
    first = next((p for r in reports for p in r.problems), None) or next(iter(problems), None)
    if first is not None:
        raise DataError(f"{args.data}: {first}")
    print("ok: run, validate and quantize accept this file")
    return 0
