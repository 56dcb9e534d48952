"""``mcudeploy plan``: static memory planning.

Two modes:

* ``mcudeploy plan MODEL --target T [deployment options] [--json F] [--png F]
  [--export-tflm OUT.tflite] [--save-config F]`` builds the model's deployment
  (:func:`mcudeploy.driver.deploy`: order, liveness, reuse, arena, regions, ledger) and
  prints the ledger. Exit 0 when everything fits, 8 when it does not (after printing the
  ledger and writing the requested files), naming the regions, the bytes, the peak step and
  the tensors alive there. ``--export-tflm`` plans in the file's operator order without
  Pad folding (TFLite Micro runs the file's own tensors in that order) and writes the offsets
  as TFLite Micro's offline plan.
* ``mcudeploy plan --allocation-csv IN.csv [--capacity N] [-o OUT.csv]`` solves one
  MiniMalloc-format problem (``id,lower,upper,size``) and writes
  ``id,lower,upper,size,offset``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..driver import deploy
from ..errors import UsageError
from ..estimate.render import latency_lines
from ..options import options_toml
from ..plan import ALLOCATORS, allocate, describe_fit, require_fit, validate_plan
from ..report.console import PIPED_WIDTH, make_console, printable
from ..report.plain_table import plain_text
from ..report.plan_render import ledger_tables, plan_figures, rich_table
from ..runs.capture import note_deployment, note_estimate
from ..units import byte_text, parse_size
from .deployment_args import add_deployment_arguments, deployment_options
from .model_arguments import input_shapes_from
from .output import add_json_argument, check_outputs, emit, to_stdout
from .registry import command

if TYPE_CHECKING:
    from ..deployment import Deployment

CSV_TIME_LIMIT = 60.0


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", type=Path,
                        help="model to plan (or give --allocation-csv instead)")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME (needed for dynamic dimensions); repeatable")
    add_deployment_arguments(parser)
    add_json_argument(parser, "the plan (every buffer's region and offset, the ledger, the options)")
    parser.add_argument("--png", type=Path, metavar="OUT.png", help="write the memory timeline picture")
    parser.add_argument("--export-tflm", type=Path, metavar="OUT.tflite",
                        help="write a copy of the .tflite model with our offsets as TFLM's offline plan")
    parser.add_argument("--save-config", type=Path, metavar="FILE.toml",
                        help="write the deployment options as a --config file")
    csv = parser.add_argument_group("one allocation problem")
    csv.add_argument("--allocation-csv", type=Path, metavar="IN.csv",
                     help="solve one MiniMalloc problem (columns id,lower,upper,size)")
    csv.add_argument("--capacity", metavar="BYTES", help="memory available, e.g. 1048576, 1024K, 1M")
    csv.add_argument("-o", "--output", type=Path, metavar="OUT.csv",
                     help="write the plan (id,lower,upper,size,offset) when it fits")
    csv.add_argument("--allocator", default="portfolio", choices=["portfolio", *sorted(ALLOCATORS)],
                     help="allocator to run (default: portfolio = greedy + search + exact)")
    csv.add_argument("--seed", type=int, default=0, help="seed of the searches (default 0)")
    parser.add_argument("--time-limit", type=float, metavar="S",
                        help=f"seconds the search may take (model: default 10; --allocation-csv: "
                             f"default {CSV_TIME_LIMIT:g})")


@command("plan", "Plan static memory of a model on a target (ledger, arena, regions), or solve "
         "one allocation problem", _arguments)
def run(args: argparse.Namespace) -> int:
    if args.model is not None and args.allocation_csv is not None:
        raise UsageError(f"give either a model or --allocation-csv, not both ({args.model})")
    if args.model is not None:
        return _plan_model(args)
    if args.allocation_csv is None:
        raise UsageError("mcudeploy plan needs a MODEL (with --target) or --allocation-csv IN.csv")
    return _plan_csv(args)


def _plan_model(args: argparse.Namespace) -> int:
    outputs = {"--json": args.json, "--png": args.png, "--export-tflm": args.export_tflm,
               "--save-config": args.save_config}
    check_outputs(outputs, [args.model, args.config])
    exporting = args.export_tflm is not None
    options = deployment_options(args)
    if exporting:
        from ..exporters.tflm_offline import check_export_available
        check_export_available()
        options = options.with_values(schedule="file")
    deployment = deploy(args.model, options, input_shapes=input_shapes_from(args),
                        keep_model_tensors=exporting)
    note_deployment(deployment)
    if not to_stdout(args.json):
        _print(deployment)
    if args.json is not None:
        emit(json.dumps(deployment.to_json(), indent=1) + "\n", args.json, "--json")
    if args.png is not None:
        from ..plan.timeline import write_timeline  # matplotlib: loaded only when drawing
        # the model's name, without control characters (matplotlib echoes a missing glyph, ESC too)
        write_timeline(deployment.plan, args.png, title=printable(
            f"{deployment.name}: arena {deployment.plan.arena_bytes} B", one_line=True))
        make_console().print(f"timeline written to {args.png}")
    if exporting:
        from ..exporters.tflm_offline import export_tflm_offline
        result = export_tflm_offline(Path(args.model), deployment.plan, args.export_tflm)
        make_console().print(f"TFLM model with offline plan written to {result.path} "
                             f"({result.planned} tensors at fixed offsets, {len(result.online)} left online)")
    if args.save_config is not None:
        emit(options_toml(options, header=f"deployment options of {deployment.name}"), args.save_config,
             "--save-config")
    deployment.require_fit()
    return 0


def _print(deployment: Deployment) -> None:
    tables, lines = ledger_tables(deployment), plan_figures(deployment) + latency_lines(deployment, note_estimate)
    text = None if sys.stdout.isatty() else plain_text(tables, lines, PIPED_WIDTH)
    if text is not None:   # what the console would print, without importing rich
        sys.stdout.write(text)
        return
    console = make_console()
    for table in tables:
        console.print(rich_table(table))
    for line in lines:
        console.print(line, markup=False)


def _plan_csv(args: argparse.Namespace) -> int:
    time_limit = CSV_TIME_LIMIT if args.time_limit is None else args.time_limit
    if not 0 < time_limit < float("inf"):
        raise UsageError(f"--time-limit must be a positive number of seconds, got {time_limit}")
    check_outputs({"-o": args.output}, [args.allocation_csv])
    try:
        capacity = parse_size(args.capacity) if args.capacity is not None else None
    except ValueError as err:
        raise UsageError(f"--capacity {args.capacity!r}: {err}") from None
    from ..plan.minimalloc_csv import read_buffers, write_plan  # the csv mode only
    buffers = read_buffers(args.allocation_csv)
    plan = allocate(buffers, args.allocator, capacity, time_limit, args.seed)
    validate_plan(buffers, plan)
    sizes = {b.id: b.size for b in buffers}
    _print_summary(args.allocation_csv, buffers, plan)
    console = make_console()
    if plan.fits and args.output is not None:
        write_plan(args.output, buffers, plan)
        console.print(f"plan written to {args.output}")
    elif args.output is not None:
        console.print(f"no plan written to {args.output}: it does not fit")
    require_fit(plan, sizes)
    return 0


def _print_summary(source: Path, buffers, plan) -> None:
    rows = [("problem", str(source)),
            ("buffers", str(len(buffers))),
            ("lower bound", byte_text(plan.best_lower_bound)),
            ("achieved size", byte_text(plan.arena_size)),
            ("overhead", f"{plan.overhead_percent:.2f} % over the live-set bound"),
            ("capacity", byte_text(plan.capacity) if plan.capacity is not None else "none"),
            ("result", describe_fit(plan, {b.id: b.size for b in buffers})),
            ("proof", plan.proof),
            ("time", f"{plan.seconds:.2f} s"),
            ("allocator", plan.allocator)]
    width = max(len(name) for name, _ in rows)
    console = make_console()
    for name, value in rows:
        console.print(f"{name:<{width}}  {value}", markup=False)
