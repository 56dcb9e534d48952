"""``mcudeploy estimate``: latency, memory traffic and bandwidth of a model on a target.

Two modes:

* ``mcudeploy estimate MODEL --target T [deployment options] [--runtime NAME] [--core-clock HZ]
  [--npu-clock HZ] [--overlay FILE] [--json F|-] [--csv F|-]`` builds the deployment
  (:func:`mcudeploy.driver.deploy`, the same record ``plan`` and ``generate`` use) and prints
  :func:`mcudeploy.estimate.estimate`'s summary, the per-layer table, the five slowest layers
  and why. Exit 0; 8 when the deployment does not fit (the estimate is printed first).
* ``mcudeploy estimate --calibrate MEASURED.csv [--models DIR] [-o OVERLAY.toml]`` fits the
  per-core constants to measured latencies (:mod:`mcudeploy.estimate.calibrate`) and writes a
  target overlay that ``--overlay`` reads.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
from functools import lru_cache
from pathlib import Path

from ..driver import deploy
from ..errors import UsageError
from ..estimate import estimate, runtime_names
from ..estimate.calibrate import calibrate, read_rows
from ..estimate.estimator import check_runtime
from ..estimate.overlay import load_overlay, overlay_toml
from ..estimate.render import LAYER_HEADER, layer_rows, summary_lines, top_lines
from ..options import DeploymentOptions
from ..report.console import csv_cell, make_console
from ..runs.capture import note_deployment, note_estimate
from .cmd_analyze import input_shapes_from
from .deployment_args import add_deployment_arguments, deployment_options
from .output import add_json_argument, check_outputs, emit, to_stdout
from .registry import command


def _hertz(text: str) -> float:
    """``80e6``, ``80000000``, ``80M`` / ``80MHz`` -> Hz."""
    value = text.strip().lower().removesuffix("hz")
    scale = {"k": 1e3, "m": 1e6, "g": 1e9}.get(value[-1:], 1.0)
    try:
        return float(value[:-1] if scale != 1.0 else value) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a clock in Hz (e.g. 80e6 or 80MHz)") from None


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", type=Path, help="model to estimate (or give --calibrate)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME (needed for dynamic dimensions); repeatable")
    add_deployment_arguments(parser)
    group = parser.add_argument_group("estimate")
    group.add_argument("--runtime", default="mcudeploy", metavar="NAME",
                       help=f"runtime profile: {', '.join(runtime_names())} (default mcudeploy), or a library "
                            "version the shipped defaults or --overlay calibrated (e.g. \"x-cube-ai 10.2\")")
    group.add_argument("--core-clock", type=_hertz, metavar="HZ", help="core clock instead of the target's")
    group.add_argument("--npu-clock", type=_hertz, metavar="HZ", help="NPU clock instead of the target's")
    group.add_argument("--overlay", type=Path, metavar="FILE.toml", help="calibrated constants (from --calibrate)")
    add_json_argument(parser, "the estimate (summary and every layer)")
    group.add_argument("--csv", metavar="FILE", help="write the per-layer table as CSV ('-' = stdout)")
    calibration = parser.add_argument_group("calibration")
    calibration.add_argument("--calibrate", type=Path, metavar="MEASURED.csv",
                             help="fit the per-core constants to measured latencies (columns model, soc or "
                                  "target, cpu_mhz, framework, latency_ms)")
    calibration.add_argument("--models", type=Path, metavar="DIR", help="folder the CSV's model paths are relative to")
    calibration.add_argument("-o", "--output", type=Path, metavar="OVERLAY.toml", help="write the fitted overlay")


@command("estimate", "Estimate latency, memory traffic and bandwidth per layer on a target, or calibrate "
         "the estimator to measured latencies", _arguments)
def run(args: argparse.Namespace) -> int:
    if args.calibrate is not None:
        if args.model is not None:
            raise UsageError(f"give either a model or --calibrate, not both ({args.model})")
        return _calibrate(args)
    if args.model is None:
        raise UsageError("mcudeploy estimate needs a MODEL (with --target) or --calibrate MEASURED.csv")
    return _estimate(args)


def _estimate(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json, "--csv": args.csv}, [args.model, args.config, args.overlay])
    options = deployment_options(args)
    if options.target is None:
        raise UsageError("mcudeploy estimate needs --target NAME (see 'mcudeploy targets') or a target .toml file")
    overlay = load_overlay(args.overlay) if args.overlay is not None else None
    check_runtime(args.runtime, overlay)
    deployment = deploy(args.model, options, input_shapes=input_shapes_from(args))
    note_deployment(deployment)
    result = estimate(deployment, runtime=args.runtime, core_clock_hz=args.core_clock,
                      npu_clock_hz=args.npu_clock, overlay=overlay)
    note_estimate(result)
    if not to_stdout(args.json, args.csv):
        _print(result)
        if not deployment.fits:
            make_console().print(f"note: the deployment does not fit: {deployment.ledger.verdict()}", markup=False)
    if args.json is not None:
        emit(json.dumps(result.to_json(), indent=1) + "\n", args.json, "--json")
    if args.csv is not None:
        emit(_csv(result), args.csv, "--csv")
    deployment.require_fit("estimated, but")
    return 0


def _print(result) -> None:
    from rich.table import Table
    console = make_console()
    for line in summary_lines(result):
        console.print(line, markup=False)
    table = Table(title="per layer", box=None, header_style="bold")
    for name in LAYER_HEADER:
        table.add_column(name, justify="right" if name in ("#", "time", "share") else "left")
    for row in layer_rows(result):
        table.add_row(*row)
    console.print(table)
    console.print("slowest layers:", markup=False)
    for line in top_lines(result):
        console.print(line, markup=False)


def _csv(result) -> str:
    rows = result.csv_rows()
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({key: csv_cell(value) for key, value in row.items()})
    return out.getvalue()


@lru_cache(maxsize=64)
def _deployment(model: Path, target: str):
    return deploy(model, DeploymentOptions(target=target))


def _calibrate(args: argparse.Namespace) -> int:
    check_outputs({"-o": args.output}, [args.calibrate])
    rows = read_rows(args.calibrate, args.models)
    result = calibrate(rows, _deployment, str(args.calibrate))
    console = make_console()
    for line in result.overlay.header.splitlines():
        console.print(line, markup=False)
    for row in result.rows:
        where = row.board if row.board == row.target else f"{row.board} (on {row.target}'s memories)"
        console.print(f"  line {row.line}: {row.model.name} on {where} ({row.label}): measured "
                      f"{row.measured_ms:.4g} ms, fitted {row.predicted_ms:.4g} ms "
                      f"({row.predicted_ms / row.measured_ms - 1:+.1%})", markup=False)
    if args.output is not None:
        emit(overlay_toml(result.overlay), args.output, "-o")
        console.print(f"overlay written to {args.output}; use it with --overlay {args.output}", markup=False)
    return 0
