"""The deployment's memory ledger as rich tables and lines of text (``mcudeploy plan``).

Input: a :class:`~mcudeploy.deployment.Deployment`. Output: renderables the CLI prints; no
printing here. The console of :func:`~.console.make_console` shows names as written.
"""
from __future__ import annotations

from rich.table import Table

from ..units import byte_text


def ledger_tables(deployment) -> list[Table]:
    ledger = deployment.ledger
    table = Table(title=f"memory ledger: {deployment.name}")
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
    return [table, regions]


def plan_figures(deployment) -> list[str]:
    """The arena figures, the placement reasons, the kernel variants and the verdict."""
    plan = deployment.plan
    lines = [f"arena {byte_text(plan.arena_bytes)}; live-set bound without reuse "
             f"{byte_text(plan.no_reuse_bound_bytes)}; file-order bound {byte_text(plan.file_order_bound_bytes)}; "
             f"reuse rate {plan.reuse_rate:.1%}; {len(plan.pairs)} in-place / overlap reuses; "
             f"allocator: {plan.allocator}"]
    if plan.placement is not None:
        lines += [f"{item}: {reason}" for item, reason in plan.placement.reasons.items()]
    counts = deployment.kernels.counts()
    lines.append("kernels: " + ", ".join(f"{count} {name}" for name, count in sorted(counts.items())))
    lines += [f"note: {warning}" for warning in deployment.warnings]
    lines.append(deployment.ledger.verdict())
    return lines
