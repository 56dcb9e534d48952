"""``mcudeploy targets [NAME|FILE]``: list the built-in targets, or show one target."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..report.console import make_console
from ..report.render import human_bytes
from ..targets import Target, builtin_names, load_target
from .registry import command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", nargs="?", metavar="NAME|FILE.toml",
                        help="show this target (a built-in name or a target file)")
    parser.add_argument("--json", action="store_true", help="print as JSON")


def _npu_text(target: Target) -> str:
    npu = target.npu
    return "-" if npu is None else f"{npu.name} {npu.clock_hz / 1e6:g} MHz, {npu.tops:g} TOPS"


def _list(console: Console) -> None:
    table = Table(title="built-in targets")
    for column in ("name", "core", "NPU", "on-chip SRAM", "regions"):
        table.add_column(column, no_wrap=column in ("name", "on-chip SRAM", "regions"))
    table.add_column("description", overflow="fold")
    for name in builtin_names():
        target = load_target(name)
        table.add_row(name, f"{target.core.name} {target.core.clock_hz / 1e6:g} MHz",
                      _npu_text(target), human_bytes(target.total_sram), str(len(target.regions)),
                      target.description)
    console.print(table)


def _show(target: Target, console: Console) -> None:
    core = target.core
    console.print(f"[bold]{escape(target.name)}[/bold]: {escape(target.description)}", markup=True)
    console.print(f"source: {target.source}; references: {'; '.join(target.references) or '-'}")
    console.print(f"core: {core.name} ({core.arch or 'architecture unknown'}) {core.clock_hz / 1e6:g} MHz, FPU {core.fpu}, "
                  f"DSP {'yes' if core.dsp else 'no'}, MVE {core.mve}; layout {target.layout}")
    if target.npu is not None:
        npu = target.npu
        console.print(f"NPU: {_npu_text(target)}, dtypes {', '.join(sorted(npu.dtypes))}, "
                      f"channel alignment {npu.channel_alignment}, max kernel "
                      f"{npu.max_kernel or '-'}, max stride {npu.max_stride or '-'}, "
                      f"max dimension {npu.max_dimension or '-'}")
        console.print(f"NPU ops: {', '.join(sorted(npu.ops))}")
    table = Table(title="memory regions")
    for column in ("name", "base", "size", "kind", "access", "MB/s", "latency", "security"):
        table.add_column(column, no_wrap=True)
    table.add_column("note", overflow="fold")
    for region in target.regions:
        table.add_row(region.name, f"{region.base:#010x}", human_bytes(region.size), region.kind,
                      region.access, f"{region.bandwidth / 1e6:g}" if region.bandwidth else "-",
                      str(region.latency_cycles), region.security, region.note)
    console.print(table)
    for note in target.notes:
        console.print(f"note: {note}")


def _as_json(target: Target) -> dict:
    data = dataclasses.asdict(target)
    if target.npu is not None:
        data["npu"]["ops"] = sorted(target.npu.ops)
        data["npu"]["dtypes"] = sorted(target.npu.dtypes)
    return data


@command("targets", "List the built-in hardware targets, or show one target's core, NPU and memory",
         _arguments)
def run(args: argparse.Namespace) -> int:
    console = make_console()
    if args.target is None:
        if args.json:
            sys.stdout.write(json.dumps([_as_json(load_target(n)) for n in builtin_names()],
                                        indent=2) + "\n")
        else:
            _list(console)
        return 0
    target = load_target(args.target)
    if args.json:
        sys.stdout.write(json.dumps(_as_json(target), indent=2) + "\n")
    else:
        _show(target, console)
    return 0
