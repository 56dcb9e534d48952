"""The deployment's memory ledger as tables and lines of text (``mcudeploy plan``).

Input: a :class:`~mcudeploy.deployment.Deployment`. Output: :class:`~.plain_table.TableText`
s and lines the CLI prints (as plain text when :func:`~.plain_table.plain_text` can, else
through :func:`rich_table` and the console of :func:`~.console.make_console`, which shows
names as written); no printing here.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..units import byte_text
from .plain_table import TableText

if TYPE_CHECKING:
    from rich.table import Table

    from ..deployment import Deployment


def ledger_tables(deployment: Deployment) -> list[TableText]:
    ledger = deployment.ledger
    table = TableText(f"memory ledger: {deployment.name}",
                      [(column, "right" if column == "bytes" else "left")
                       for column in ("item", "region", "bytes", "note")])
    for line in ledger.lines:
        table.rows.append([line.item, line.region, str(line.bytes), line.note])
    regions = TableText("regions", [(column, "left") for column in ("region", "kind", "used", "capacity", "overflow")])
    for region in ledger.regions:
        regions.rows.append([region.region, region.kind, str(region.used),
                             "-" if region.capacity is None else str(region.capacity), str(region.overflow)])
    return [table, regions]


def rich_table(text: TableText) -> Table:
    """``text`` as a rich table (for a terminal, or whatever plain text cannot show)."""
    from rich.table import Table

    table = Table(title=text.title)
    for header, justify in text.columns:
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in text.rows:
        table.add_row(*row)
    return table


def plan_figures(deployment: Deployment) -> list[str]:
    """The arena figures, the placement reasons, the kernel variants and the verdict."""
    plan = deployment.plan
    lines = [f"arena {byte_text(plan.arena_bytes)}; live-set bound without reuse "
             f"{byte_text(plan.no_reuse_bound_bytes)}; file-order bound {byte_text(plan.file_order_bound_bytes)}; "
             f"reuse rate {plan.reuse_rate:.1%}; {len(plan.pairs)} in-place / overlap reuses; "
             f"allocator: {plan.allocator}"]
    lines += [f"{item}: {reason}" for item, reason in plan.placement.reasons.items()]
    counts = deployment.kernels.counts()
    lines.append("kernels: " + ", ".join(f"{count} {name}" for name, count in sorted(counts.items())))
    if deployment.kernel_arena is not None:     # which fast variants cost arena, and what was done
        lines += deployment.kernel_arena.lines()
    lines += concat_lines(deployment.graph, plan)
    executor_line = deployment.executor_line() if deployment.npu_mapping is not None else None
    if executor_line is not None:      # NPU targets: who runs the nodes, and the alternative
        lines.append(executor_line)
    lines += [f"note: {warning}" for warning in deployment.warnings]
    lines.append(deployment.ledger.verdict())
    return lines


def concat_lines(graph, plan) -> list[str]:
    """One line per Concat: in place (how, and which producers write their slices) or a copy
    and why (the planner's last refusal for it, :mod:`mcudeploy.plan.reuse`). The copies of one
    Concat in a tiled region (``name@tile0`` ... ``name@tileN``) with the same verdict are one
    line (a 64-stripe level printed 64 lines before)."""
    reasons: dict[str, str] = {}
    for node, reason in plan.reuse_refusals:
        if reason.startswith("concat in place"):
            reasons[node] = reason.removeprefix("concat in place").lstrip(" :")
    lines = []
    for node in graph.nodes:
        if node.op != "Concat":
            continue
        producers = _tile_runs([f"{value.producer.name} ({value.producer.op})" for value in node.inputs
                                if value is not None and value.producer is not None])
        if node.name in plan.elided_nodes:
            strided = any(plan.channel_strides.get(value.name) for value in node.inputs if value is not None)
            how = "channel slices, written with a channel stride" if strided else "contiguous slices"
            lines.append(f"concat {node.name}: in place ({how} by {producers or 'its producers'})")
        else:
            lines.append(f"concat {node.name}: copies ({reasons.get(node.name, 'concat in place is off')}); "
                         f"inputs from {producers or 'no node (graph inputs or constants)'}")
    return _tile_lines(lines)


_TILE = re.compile(r"(@tile|:band)(\d+(?:_\d+)?)(?![\d_])")


def _tile_key(text: str) -> str:
    return _TILE.sub(lambda m: m.group(1) + "#", text)


def _tile_runs(items: list[str]) -> str:
    """``a@tile0 (Conv), a@tile1 (Conv), ...`` -> ``a@tile0..N (Conv) (N+1 tiles)``; other items kept."""
    groups: list[tuple[str, list[str]]] = []
    for item in items:
        numbers = [m.group(2) for m in _TILE.finditer(item)]
        pattern = _tile_key(item)
        if len(numbers) == 1 and groups and groups[-1][0] == pattern and groups[-1][1]:
            groups[-1][1].append(numbers[0])
        else:
            groups.append((pattern, numbers if len(numbers) == 1 else []))
    shown = []
    for pattern, numbers in groups:
        if len(numbers) > 2:
            shown.append(pattern.replace("#", f"{numbers[0]}..{numbers[-1]}", 1) + f" ({len(numbers)} tiles)")
        elif numbers:
            shown.extend(pattern.replace("#", number, 1) for number in numbers)
        else:
            shown.append(pattern)
    return ", ".join(shown)


def _tile_lines(lines: list[str]) -> list[str]:
    """Lines that differ only in their tile numbers (the same Concat in every tile) as one."""
    groups: dict[str, list[str]] = {}
    for line in lines:
        groups.setdefault(_tile_key(line), []).append(line)
    out = []
    for pattern, members in groups.items():
        if len(members) > 2:
            names = [found[-1][1] for line in members if (found := _TILE.findall(line.partition(": ")[0]))]
            head, _, rest = pattern.partition(": ")
            first_last = f"{names[0]}..{names[-1]}" if names else "#"
            out.append(f"{head.replace('#', first_last, 1)} ({len(members)} tiles, each): "
                       + rest.replace("#", "N"))
        else:
            out.extend(members)
    return out
