"""``preprocess.c`` / ``preprocess.h`` of a ``[preprocess]`` spec for one model input: the
tables of :func:`mcudeploy.preprocess.image.build_tables` / :func:`mcudeploy.preprocess.audio.audio_tables`
written as C arrays, and the same integer formulas (pixel fetch; FFT, mel, log2, requantization).
"""
from __future__ import annotations

import numpy as np

from ..codegen.c_literals import c_array_body, c_float, c_int, c_type
from ..codegen.templates import render
from ..errors import UsageError
from ..ir import Value
from .audio import audio_tables
from .image import build_tables
from .spec import AudioPreprocess, ImagePreprocess


def audio_files(spec: AudioPreprocess, value: Value) -> dict[str, str]:
    """The C of :mod:`.audio` for input ``value``."""
    tables = audio_tables(spec, value)
    context = {**spec.__dict__, "frames": spec.frames, "mel_bins": tables.mel_bins, "input_name": value.name,
               "c_type": c_type(tables.dtype), "input_bytes": int(np.prod(value.shape)) * tables.dtype.itemsize,
               "weight_count": int(tables.mel_weights.size), "is_float": tables.dtype.kind == "f",
               "float_scale": c_float(float(tables.float_scale)), "float_offset": c_float(spec.offset),
               "multiplier": c_int(tables.multiplier, 64), "bias": c_int(tables.bias, 64), "shift": tables.shift,
               "rounding": c_int(1 << max(tables.shift - 1, 0), 64)}
    if tables.dtype.kind != "f":
        info = np.iinfo(tables.dtype)
        context.update(q_min=int(info.min), q_max=int(info.max))
    for name, dtype in (("window", np.int16), ("twiddle_re", np.int16), ("twiddle_im", np.int16),
                        ("bit_reverse", np.int32), ("mel_start", np.int32), ("mel_count", np.int32),
                        ("mel_weights", np.int32), ("log2_table", np.int32)):
        context[name] = c_array_body(getattr(tables, name).astype(dtype))
    return {"preprocess.c": render("preprocess/audio.c.j2", context),
            "preprocess.h": render("preprocess/audio.h.j2", context)}


def preprocess_files(spec: ImagePreprocess | AudioPreprocess, value: Value) -> dict[str, str]:
    """``{"preprocess.c": ..., "preprocess.h": ...}`` feeding input ``value``."""
    if isinstance(spec, AudioPreprocess):
        return audio_files(spec, value)
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


def add_preprocess_files(files: dict[str, str], spec: ImagePreprocess | AudioPreprocess | None, graph) -> dict[str, str]:
    """``files`` of a generated project with ``preprocess.c/.h`` for the graph's one input
    (unchanged when ``spec`` is None)."""
    if spec is None:
        return files
    if len(graph.inputs) != 1:
        raise UsageError(f"[preprocess]: the model has {len(graph.inputs)} inputs; [preprocess] feeds a "
                         "single-input image model")
    return {**files, **preprocess_files(spec, graph.inputs[0])}
