"""Memory timeline picture of a plan: steps across, arena addresses up, one rectangle per tensor.

Input: a :class:`~.memory_plan.MemoryPlan`. Output: a PNG (matplotlib, Agg backend, no display).
Tensor t is the rectangle ``[first_step, last_step + 1) x [offset, offset + size)``; tensors
sharing bytes by a proved reuse (``alias_of``) are hatched; scratch buffers are grey; the
dashed lines are the arena size and the live-set lower bound.
"""
from __future__ import annotations

import io
from pathlib import Path

from ..extras import require
from ..safe_io import write_bytes
from .memory_plan import MemoryPlan


def write_timeline(plan: MemoryPlan, path: Path, title: str = "") -> Path:
    """Draw ``plan`` into ``path`` (PNG) and return the path."""
    matplotlib = require("matplotlib", "plot", "the memory timeline (--png)")
    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.patches import Rectangle

    figure, axes = pyplot.subplots(figsize=(max(6.0, min(24.0, len(plan.order) * 0.25)), 5))
    colours = pyplot.get_cmap("tab20")
    for index, tensor in enumerate(plan.tensors.values()):
        axes.add_patch(Rectangle((tensor.first_step, tensor.offset), tensor.last_step + 1 - tensor.first_step,
                                 tensor.size, facecolor=colours(index % 20), edgecolor="black", linewidth=0.3,
                                 alpha=0.6 if tensor.alias_of else 0.85, hatch="//" if tensor.alias_of else None))
    for tensor in plan.scratch.values():
        axes.add_patch(Rectangle((tensor.first_step, tensor.offset), 1, tensor.size, facecolor="0.6",
                                 edgecolor="black", linewidth=0.3))
    axes.axhline(plan.arena_bytes, color="red", linestyle="--", linewidth=1,
                 label=f"arena {plan.arena_bytes} B")
    axes.axhline(plan.no_reuse_bound_bytes, color="blue", linestyle=":", linewidth=1,
                 label=f"live-set bound {plan.no_reuse_bound_bytes} B (no reuse)")
    axes.set_xlim(0, max(1, len(plan.order)))
    axes.set_ylim(0, max(plan.arena_bytes, plan.no_reuse_bound_bytes, 1) * 1.05)
    axes.set_xlabel("step (node in execution order)")
    axes.set_ylabel("arena offset (bytes)")
    # the title holds the model's file name: plain text, never mathtext ("in_math$x^$" would not parse)
    axes.set_title(title or f"memory timeline: {len(plan.tensors)} tensors", parse_math=False)
    axes.legend(loc="upper right", fontsize="small")
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)   # PNG whatever the file name says
    pyplot.close(figure)
    return write_bytes(path, image.getvalue(), "--png")
