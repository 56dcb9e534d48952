"""``mcudeploy plan MODEL --target T``: plan a model's memory and print its ledger.

    mcudeploy plan MODEL [--target T] [--sram-limit 384K] [--reserve 200K] [--alignment 16]
                         [--no-io-in-arena] [--schedule memory-aware|file] [--stack 4K]
                         [--json OUT] [--png OUT] [--export-tflm OUT.tflite]

:func:`add_model_plan_arguments` adds the options to the ``plan`` command's parser and
:func:`run_model_plan` runs it (exit 0 when everything fits; a model that does not fit
raises :class:`~mcudeploy.errors.DoesNotFitError` *after* printing the ledger and writing
the requested files, with the peak step and the tensors alive there). ``--export-tflm``
plans in the file's operator order (TFLM runs that order) and writes the offsets as TFLM's
offline plan; Pad folding is applied only when not exporting (it changes the tensors).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import DoesNotFitError, UsageError
from ..driver import load_for_deployment
from ..importers import parse_input_shape
from .fit import byte_size, byte_text
from .ledger import DEFAULT_STACK, Ledger, build_ledger
from .memory_plan import SCHEDULES, MemoryPlan, plan_memory

def add_model_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of planning a model (the ``model`` positional is the command's own)."""
    parser.add_argument("--target", metavar="NAME|FILE.toml", help="target whose memory regions to plan for")
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="fix the shape of input NAME (needed for dynamic dimensions); repeatable")
    parser.add_argument("--sram-limit", metavar="BYTES", help="cap each on-chip region at this size (e.g. 384K)")
    parser.add_argument("--reserve", metavar="BYTES", default="0",
                        help="on-chip bytes kept for the application (e.g. 200K)")
    parser.add_argument("--stack", metavar="BYTES", default=str(DEFAULT_STACK), help="stack size (default 4096)")
    parser.add_argument("--weights-to-ram", action="store_true",
                        help="copy the most-read weights from internal flash into free on-chip RAM "
                             "(done anyway when the flash is external)")
    parser.add_argument("--alignment", type=int, default=16, help="tensor alignment in bytes (default 16)")
    parser.add_argument("--no-io-in-arena", dest="io_in_arena", action="store_false",
                        help="graph inputs / outputs are application buffers, not in the arena")
    parser.add_argument("--schedule", choices=SCHEDULES, default="memory-aware",
                        help="execution order: memory-aware (default) or the file's order")
    parser.add_argument("--no-reuse", dest="reuse", action="store_false",
                        help="no in-place / overlap / concat reuse (views still alias)")
    parser.add_argument("--json", dest="json_path", type=Path, metavar="OUT.json",
                        help="write the plan (region and offset of every buffer) as JSON")
    parser.add_argument("--png", type=Path, metavar="OUT.png", help="write the memory timeline picture")
    parser.add_argument("--export-tflm", type=Path, metavar="OUT.tflite",
                        help="write a copy of the .tflite model with our offsets as TFLM's offline plan")


def _input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    return dict(parse_input_shape(text) for text in getattr(args, "input_shape", None) or [])


def run_model_plan(args: argparse.Namespace) -> int:
    """Plan ``args.model`` (see the module docstring); 0 when it fits."""
    target = _target(args)
    limits = {"sram_limit": byte_size(args.sram_limit, "--sram-limit") if args.sram_limit else None,
              "reserve": byte_size(args.reserve, "--reserve"), "stack": byte_size(args.stack, "--stack")}
    exporting = getattr(args, "export_tflm", None) is not None
    graph = load_for_deployment(args.model, input_shapes=_input_shapes(args), fold_pads=not exporting)
    plan = plan_memory(graph, target, alignment=args.alignment, io_in_arena=args.io_in_arena,
                       reuse=args.reuse, schedule="file" if exporting else args.schedule,
                       time_limit=getattr(args, "time_limit", 10.0))
    ledger = build_ledger(graph, plan, target, **limits,
                          copy_weights_to_ram=getattr(args, "weights_to_ram", False))
    print_ledger(Path(args.model).name, plan, ledger)
    _write_outputs(args, graph, plan, ledger)
    if not ledger.fits:
        raise DoesNotFitError(ledger.verdict())
    return 0


def _target(args: argparse.Namespace):
    if not getattr(args, "target", None):
        return None
    from ..targets import load_target
    return load_target(args.target)


def _write_outputs(args, graph, plan: MemoryPlan, ledger: Ledger) -> None:
    if args.json_path is not None:
        document = {"model": str(args.model), "target": getattr(args, "target", None), **plan.to_json(),
                    "ledger": [line.__dict__ for line in ledger.lines],
                    "regions": [{**r.__dict__, "overflow": r.overflow} for r in ledger.regions],
                    "fits": ledger.fits}
        args.json_path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print(f"plan written to {args.json_path}")
    if args.png is not None:
        from .timeline import write_timeline
        write_timeline(plan, args.png, title=f"{Path(args.model).name}: arena {plan.arena_bytes} B")
        print(f"timeline written to {args.png}")
    if getattr(args, "export_tflm", None) is not None:
        from ..exporters.tflm_offline import export_tflm_offline
        result = export_tflm_offline(Path(args.model), plan, args.export_tflm)
        print(f"TFLM model with offline plan written to {result.path} "
              f"({result.planned} tensors at fixed offsets, {len(result.online)} left online)")


def print_ledger(model_name: str, plan: MemoryPlan, ledger: Ledger) -> None:
    """The ledger table, the figures and the verdict."""
    from rich.table import Table

    from ..report.console import make_console
    table = Table(title=f"memory ledger: {model_name}")
    for column in ("item", "region", "bytes", "note"):
        table.add_column(column, justify="right" if column == "bytes" else "left")
    for line in ledger.lines:
        table.add_row(line.item, line.region, str(line.bytes), line.note)
    regions = Table(title="regions")
    for column in ("region", "kind", "used", "capacity", "overflow"):
        regions.add_column(column)
    for region in ledger.regions:
        regions.add_row(region.region, region.kind, str(region.used),
                        "-" if region.capacity is None else str(region.capacity), str(region.overflow))
    console = make_console()
    console.print(table)
    console.print(regions)
    console.print(f"arena {byte_text(plan.arena_bytes)}; live-set bound (no reuse) "
                  f"{byte_text(plan.lower_bound_bytes)}; file-order bound {byte_text(plan.file_order_bound_bytes)}; "
                  f"reuse rate {plan.reuse_rate:.1%}; {len(plan.pairs)} in-place / overlap reuses; "
                  f"allocator: {plan.allocator}")
    console.print(ledger.verdict(), markup=False)
