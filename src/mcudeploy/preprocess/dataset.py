"""A folder of image files or WAV files -> model inputs through ``[preprocess]``: what
``quantize --calib FOLDER --preprocess FILE`` and ``validate --data FOLDER --preprocess FILE``
use, so the PC calibrates and validates on the tensors the board's ``preprocess.c`` makes.

Images: each file is decoded by Pillow to RGB888 (gray8 for a ``gray8`` spec) and resized to
the spec's frame (``width x height``, Pillow's bilinear) when it has another size: that frame
then goes through :func:`.image.preprocess_frame` (crop, resize, channels, normalisation) as a
camera frame would. WAV: :func:`.audio.read_wav`, then :func:`.audio.preprocess_clip`. A float
model input receives the real values ``x``, an integer one the quantized ``q`` (module
docstrings of :mod:`.image` and :mod:`.audio`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import DataError, UsageError
from ..extras import require
from ..ir import Graph
from .audio import preprocess_clip, read_wav
from .image import preprocess_frame
from .spec import AudioPreprocess, ImagePreprocess

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".tif", ".tiff")
MAX_FILES = 100_000


def _image_frame(path: Path, spec: ImagePreprocess) -> tuple[np.ndarray, ImagePreprocess]:
    image_module = require("PIL.Image", "images", "[preprocess] on a folder of images")
    gray = spec.format == "gray8"
    try:
        with image_module.open(path) as image:
            if image.width * image.height > 64 * spec.width * spec.height:
                raise DataError(f"{path}: {image.width} x {image.height} pixels, far above the "
                                f"{spec.width} x {spec.height} frame of [preprocess]")
            frame = image.convert("L" if gray else "RGB")
            if frame.size != (spec.width, spec.height):
                frame = frame.resize((spec.width, spec.height), image_module.BILINEAR)
            pixels = np.asarray(frame, np.uint8)
    except (OSError, ValueError, image_module.DecompressionBombError) as err:
        raise DataError(f"{path}: cannot read this image ({err})") from None
    return pixels, replace(spec, format="gray8" if gray else "rgb888")


def folder_arrays(graph: Graph, folder: Path, spec: ImagePreprocess | AudioPreprocess) -> dict[str, np.ndarray]:
    """``{input name: (N, *shape)}`` for the files of ``folder`` in name order."""
    if len(graph.inputs) != 1:
        raise UsageError(f"{folder}: [preprocess] feeds single-input models; this one has {len(graph.inputs)}")
    value = graph.inputs[0]
    suffixes = (".wav",) if isinstance(spec, AudioPreprocess) else IMAGE_SUFFIXES
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in suffixes and p.is_file())[:MAX_FILES]
    if not files:
        raise DataError(f"{folder}: no {' / '.join(suffixes)} files in this folder for [preprocess]")
    samples = []
    for path in files:
        if isinstance(spec, AudioPreprocess):
            samples.append(preprocess_clip(read_wav(path, spec), spec, value))
        else:
            frame, frame_spec = _image_frame(path, spec)
            samples.append(preprocess_frame(frame, frame_spec, value))
    return {value.name: np.stack(samples)}


def samples_of(arrays: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """``{name: (N, ...)}`` -> ``N`` samples ``{name: (...)}`` (what ``quantize`` calibrates on)."""
    count = len(next(iter(arrays.values())))
    return [{name: array[index] for name, array in arrays.items()} for index in range(count)]
