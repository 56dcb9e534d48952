"""Per-layer instructions per MACC of one layer type, before / after a kernel change, from two
``kernels.json`` files written by ``benchmarks/kernels_bench.py`` (its ``layers`` records).

Run ``python benchmarks/kernels_layers_compare.py BEFORE.json AFTER.json --core M4 --type depthwise
--out kernels_m4_depthwise.md`` (BEFORE.json: ``kernels.json`` of the bench run on the previous
commit, kept as ``results/kernels_m4_before.json``). Writes ``benchmarks/results/<out>``. QEMU's ``-icount shift=0``
counts are exact and repeatable, so two runs of the bench on different commits compare
instruction for instruction (the machine load does not enter them).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from paths import RESULTS


def layer_rows(path: Path, core: str, kind: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(model, layer) -> (instructions, MACC) of the optimised kernels' layers of ``kind``."""
    rows = {}
    for pair in json.loads(path.read_text()):
        auto = pair["auto"]
        if auto["core"] != core:
            continue
        for name, layer_kind, instructions, macc in auto.get("layers", []):
            if layer_kind == kind and macc:
                rows[(auto["model"], name)] = (instructions, macc)
    return rows


def table(before: dict, after: dict, kind: str) -> list[str]:
    lines = [f"| model | layer ({kind}) | MACC | before instr/MACC | after instr/MACC | change |",
             "|---|---|---:|---:|---:|---:|"]
    totals = [0, 0, 0]
    for key in sorted(after, key=lambda k: k[0]):
        if key not in before:
            continue
        (old, macc), (new, _) = before[key], after[key]
        totals = [totals[0] + old, totals[1] + new, totals[2] + macc]
        lines.append(f"| {key[0]} | {key[1]} | {macc:,} | {old / macc:.2f} | {new / macc:.2f} | "
                     f"{100 * (new / old - 1):+.1f} % |")
    if totals[2]:
        lines.append(f"| all | | {totals[2]:,} | {totals[0] / totals[2]:.2f} | {totals[1] / totals[2]:.2f} | "
                     f"{100 * (totals[1] / totals[0] - 1):+.1f} % |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--core", default="M4")
    parser.add_argument("--type", default="depthwise")
    parser.add_argument("--out", default="kernels_layers.md")
    args = parser.parse_args()
    before, after = layer_rows(args.before, args.core, args.type), layer_rows(args.after, args.core, args.type)
    text = "\n".join([f"# {args.type} layers on {args.core}: instructions per MACC before / after", "",
                      f"`python benchmarks/kernels_layers_compare.py {shlex.join(sys.argv[1:])}`; both files written by "
                      "`benchmarks/kernels_bench.py` (QEMU -icount shift=0, exact counts).", ""]
                     + table(before, after, args.type)) + "\n"
    (RESULTS / args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
