"""Scatter plot of float vs dequantized quantized outputs (``--plot OUT.png``).

One panel per output: every element of every sample as a point ``(float value, dequantized
value)``, the diagonal ``y = x`` (perfect agreement) and the cosine in the title. Uses
matplotlib's non-interactive Agg backend, so it works without a display.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..extras import require
from ..safe_io import check_output_path, write_bytes

MAX_POINTS = 20000  # per panel; larger outputs are subsampled (seeded) to keep the file small


def _points(reference: np.ndarray, estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.ravel(reference), np.ravel(estimate)
    if x.size > MAX_POINTS:
        keep = np.random.default_rng(0).choice(x.size, MAX_POINTS, replace=False)
        x, y = x[keep], y[keep]
    return x, y


def write_scatter(path: str | Path, float_outputs: dict[str, np.ndarray],
                  quantized_outputs: dict[str, np.ndarray], cosines: dict[str, float]) -> Path:
    """Write the PNG to ``path`` (:mod:`mcudeploy.safe_io`: a folder, a missing folder or a
    failed write is a :class:`~mcudeploy.errors.UsageError`)."""
    matplotlib = require("matplotlib", "plot", "the scatter plot (--plot)")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    path = check_output_path(path, "--plot")
    names = list(float_outputs)
    figure, axes = pyplot.subplots(1, len(names), figsize=(5 * len(names), 5), squeeze=False)
    for axis, name in zip(axes[0], names):
        x, y = _points(float_outputs[name], quantized_outputs[name])
        axis.scatter(x, y, s=4, alpha=0.5)
        low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        axis.plot([low, high], [low, high], color="grey", linewidth=1)
        axis.set_xlabel("float model")
        axis.set_ylabel("quantized model (dequantized)")
        axis.set_title(f"{name[:40]}\ncosine {cosines.get(name, float('nan')):.5f}", fontsize=9)
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png", dpi=100)
    pyplot.close(figure)
    return write_bytes(path, image.getvalue(), "--plot")
