"""``preprocess.c`` / ``preprocess.h`` of a ``[preprocess]`` spec for one model input: the
tables of :func:`mcudeploy.preprocess.image.build_tables` written as C arrays, and the
per-format pixel fetch of :mod:`mcudeploy.preprocess.image` step 1 (same integer formulas).
"""
from __future__ import annotations

import numpy as np

from ..codegen.c_literals import c_array_body, c_type
from ..codegen.templates import render
from ..errors import UsageError
from ..ir import Value
from .image import build_tables
from .spec import ImagePreprocess


def preprocess_files(spec: ImagePreprocess, value: Value) -> dict[str, str]:
    """``{"preprocess.c": ..., "preprocess.h": ...}`` feeding input ``value``."""
    geometry, tables = build_tables(value, spec)
    context = {
        "format": spec.format, "frame_width": spec.width, "frame_height": spec.height,
        "frame_bytes": spec.frame_bytes, "crop": list(spec.crop), "resize": spec.resize,
        "bilinear": spec.resize == "bilinear", "channel_order": spec.channel_order,
        "input_name": value.name, "height": geometry.height, "width": geometry.width,
        "channels": geometry.channels, "layout": geometry.layout, "c_type": c_type(geometry.dtype),
        "input_bytes": geometry.height * geometry.width * geometry.channels * geometry.dtype.itemsize,
        "values": [c_array_body(row) for row in tables.values],
    }
    for name in ("x0", "x1", "y0", "y1"):
        context[name] = c_array_body(getattr(tables, name).astype(np.int32))
    for name in ("wx", "wy"):
        context[name] = c_array_body(getattr(tables, name).astype(np.uint8))
    return {"preprocess.c": render("preprocess/preprocess.c.j2", context),
            "preprocess.h": render("preprocess/preprocess.h.j2", context)}


def add_preprocess_files(files: dict[str, str], spec: ImagePreprocess | None, graph) -> dict[str, str]:
    """``files`` of a generated project with ``preprocess.c/.h`` for the graph's one input
    (unchanged when ``spec`` is None)."""
    if spec is None:
        return files
    if len(graph.inputs) != 1:
        raise UsageError(f"[preprocess]: the model has {len(graph.inputs)} inputs; [preprocess] feeds a "
                         "single-input image model")
    return {**files, **preprocess_files(spec, graph.inputs[0])}
