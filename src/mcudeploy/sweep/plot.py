"""The Pareto plot of a sweep as a PNG (matplotlib, Agg backend: no display needed).

    write_pareto_png(result, path)

x: latency (ms, log scale), y: on-chip RAM (KiB); colour: accuracy when it was measured,
else the target. Cells on the front are ringed and joined in latency order; cells that do
not fit are grey crosses; a missing axis is drawn at its place as "not measured" (no
latency: cells along the RAM axis by index; no RAM: by latency only), and the title says
which axes were not measured.
"""
from __future__ import annotations

from pathlib import Path

from ..extras import require
from ..report.console import printable
from .results import SweepResult

KIB = 1024.0


def _figure():
    matplotlib = require("matplotlib", "plot", "the sweep's Pareto plot (--png)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, *plt.subplots(figsize=(8, 5.5), dpi=110)


def _value(row: dict, metric: str | None, fallback: float) -> float:
    if metric is None or row.get(metric) is None:
        return fallback
    return float(row[metric])


def _points(axes, xs, ys, rows, fits, accuracy: str | None, figure) -> None:
    """The fitting cells coloured by accuracy (or by target), the others as grey crosses."""
    kept = [i for i, fit in enumerate(fits) if fit]
    if accuracy is not None:
        scatter = axes.scatter([xs[i] for i in kept], [ys[i] for i in kept], cmap="viridis", s=28,
                               c=[_value(rows[i], accuracy, float("nan")) for i in kept])
        figure.colorbar(scatter, ax=axes, label=accuracy)
    else:
        for target in dict.fromkeys(rows[i]["target"] for i in kept):
            chosen = [i for i in kept if rows[i]["target"] == target]
            axes.scatter([xs[i] for i in chosen], [ys[i] for i in chosen], s=28, label=str(target))
    lost = [i for i, fit in enumerate(fits) if not fit]
    if lost:
        axes.scatter([xs[i] for i in lost], [ys[i] for i in lost], marker="x", color="0.6", s=24, label="does not fit")


def write_pareto_png(result: SweepResult, path: Path) -> Path:
    """Draw the front of ``result`` (module docstring) into ``path``."""
    rows = [row for row in result.rows() if row["status"] == "ok"]
    front = result.front()
    metric = {label: name for label, name, _ in front.axes}
    latency, ram = metric.get("latency"), metric.get("on-chip RAM")
    plt, figure, axes = _figure()
    xs = [_value(row, latency, row["cell"] + 1) for row in rows]
    ys = [_value(row, ram, 0.0) / KIB for row in rows]
    _points(axes, xs, ys, rows, [row.get("fits") != 0 for row in rows], metric.get("accuracy"), figure)
    on_front = set(front.front)
    chosen = sorted((i for i, row in enumerate(rows) if row["cell"] in on_front), key=lambda i: xs[i])
    axes.plot([xs[i] for i in chosen], [ys[i] for i in chosen], "-o", mfc="none", mec="crimson", color="crimson",
              ms=11, lw=1, drawstyle="steps-post", label=f"Pareto front ({len(chosen)})")
    if latency is not None and min(xs, default=1) > 0:
        axes.set_xscale("log")
    axes.set_xlabel(f"{latency} (log)" if latency else "latency: not measured (cell index)")
    axes.set_ylabel(f"{ram} (KiB)" if ram else "on-chip RAM: not measured")
    missing = ", ".join(front.missing)
    # the sweep's name is plain text: never mathtext, no control characters (matplotlib would
    # print a warning quoting the missing glyph, ESC included)
    axes.set_title(printable(f"sweep {result.spec.name}: {len(rows)} cells", one_line=True)
                   + (f" ({missing}: not measured)" if missing else ""), parse_math=False)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
