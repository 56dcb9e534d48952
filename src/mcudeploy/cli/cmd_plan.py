"""``mcudeploy plan``: static memory planning.

Two modes. ``mcudeploy plan MODEL --target T`` plans a model (order, liveness, reuse,
arena, regions; the memory ledger; see :mod:`mcudeploy.plan.model_cli`).
``--allocation-csv IN.csv`` solves one MiniMalloc-format problem (``id,lower,upper,size``)
under ``--capacity`` and writes ``id,lower,upper,size,offset`` to ``-o``. Exit 0 when the
plan fits, 8 (:class:`~mcudeploy.errors.DoesNotFitError`) when it does not, with the reason.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..plan import ALLOCATORS, allocate, describe_fit, require_fit, validate_plan
from ..plan.fit import byte_size, byte_text
from ..plan.model_cli import add_model_plan_arguments, run_model_plan
from ..plan.minimalloc_csv import read_buffers, write_plan
from .registry import command

def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", type=Path,
                        help="model to plan for --target (or give --allocation-csv instead)")
    parser.add_argument("--allocation-csv", type=Path, metavar="IN.csv",
                        help="solve one MiniMalloc problem (columns id,lower,upper,size)")
    parser.add_argument("--capacity", metavar="BYTES",
                        help="memory available, e.g. 1048576, 1024K, 1M (default: minimise)")
    parser.add_argument("-o", "--output", type=Path, metavar="OUT.csv",
                        help="write the plan (id,lower,upper,size,offset) when it fits")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                        help="seconds the search may take (default 60)")
    parser.add_argument("--allocator", default="portfolio",
                        choices=["portfolio", *sorted(ALLOCATORS)],
                        help="allocator to run (default: portfolio = greedy + search + exact)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the searches (default 0)")
    add_model_plan_arguments(parser)


@command("plan", "Plan static memory of a model on a target (ledger, arena, regions), or solve "
         "one allocation problem", _arguments)
def run(args: argparse.Namespace) -> int:
    if args.model is not None and args.allocation_csv is not None:
        raise UsageError(f"give either a model or --allocation-csv, not both ({args.model})")
    if args.model is not None:
        return run_model_plan(args)
    if args.allocation_csv is None:
        raise UsageError("mcudeploy plan needs a MODEL (with --target) or --allocation-csv IN.csv")
    if args.time_limit <= 0:
        raise UsageError(f"--time-limit must be positive, got {args.time_limit}")
    capacity = byte_size(args.capacity, "--capacity") if args.capacity is not None else None
    buffers = read_buffers(args.allocation_csv)
    plan = allocate(buffers, args.allocator, capacity, args.time_limit, args.seed)
    validate_plan(buffers, plan)
    sizes = {b.id: b.size for b in buffers}
    _print_summary(args.allocation_csv, buffers, plan)
    if plan.fits and args.output is not None:
        write_plan(args.output, buffers, plan)
        print(f"plan written to {args.output}")
    elif args.output is not None:
        print(f"no plan written to {args.output}: it does not fit")
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
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
