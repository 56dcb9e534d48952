"""Calibration data: load, check, and run through the float model to observe every tensor.

Sources (:func:`load_calibration`), each giving a list of samples ``{input name: array of the
input's declared shape}``:

* ``.npy``: one array for a single-input model, ``(N, *shape)`` (or ``(N, *shape[1:])`` when
  the model's batch dimension is 1, or one sample of exactly ``shape``);
* ``.npz``: one such array per input, keyed by input name;
* a folder of images with an :class:`ImagePreprocessing` (resize, ``scale``, mean / std,
  RGB / BGR, NCHW / NHWC): ``x = (pixels * scale - mean) / std`` per channel;
* any Python iterable of dicts (or of arrays, for a single-input model) through the API.

All data is checked before any work (wrong shape, NaN / Inf -> :class:`DataError`). Fewer
than ``RECOMMENDED_MIN`` samples logs a warning; samples that all look alike (no spread
between them, or a constant input) log a note, since ranges then describe one input only.
:func:`calibrate` runs the float reference on every sample with a progress bar and feeds
every tensor to a :class:`~.observers.ValueSample`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..errors import DataError, UsageError
from ..ir import Graph
from ..reference import run_float
from .observers import ValueSample

log = logging.getLogger(__name__)

RECOMMENDED_MIN, RECOMMENDED_MAX = 100, 500
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".ppm", ".pgm", ".webp")
Sample = dict[str, np.ndarray]


@dataclass(frozen=True)
class ImagePreprocessing:
    """How an image file becomes a model input: ``(resize(pixels) * scale - mean) / std``."""
    scale: float = 1.0 / 255.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    channel_order: str = "RGB"   # or "BGR"
    layout: str | None = None    # "NCHW" / "NHWC"; None: the input value's layout, else NCHW


def _as_samples(array: np.ndarray, name: str, shape: tuple[int, ...], origin: str) -> list[np.ndarray]:
    array = np.asarray(array)
    if array.shape == shape:
        return [array]
    if array.ndim == len(shape) + 1 and array.shape[1:] == shape:
        return list(array)
    if shape and shape[0] == 1 and array.shape[1:] == shape[1:] and array.ndim == len(shape):
        return [item[None] for item in array]
    raise DataError(f"{origin}: data for input {name!r} has shape {list(array.shape)}; expected "
                    f"{list(shape)} or [N,{','.join(map(str, shape))}]"
                    + (f" or [N,{','.join(map(str, shape[1:]))}]" if shape and shape[0] == 1 else ""))


def _check(graph: Graph, samples: list[Sample], origin: str) -> list[Sample]:
    if not samples:
        raise DataError(f"{origin}: no calibration samples; give at least one "
                        f"(recommended {RECOMMENDED_MIN}-{RECOMMENDED_MAX})")
    expected = {value.name: value for value in graph.inputs}
    for index, sample in enumerate(samples):
        if set(sample) != set(expected):
            raise DataError(f"{origin}: sample {index} has inputs {sorted(sample)}; the model takes "
                            f"{sorted(expected)}")
        for name, array in sample.items():
            value = expected[name]
            if array.shape != value.shape:
                raise DataError(f"{origin}: sample {index}, input {name!r} has shape "
                                f"{list(array.shape)}; the model expects {value.type_str()}")
            if array.dtype.kind not in "fiub":
                raise DataError(f"{origin}: input {name!r} holds {array.dtype} data; give numbers")
            if array.dtype.kind == "f" and not np.isfinite(array).all():
                raise DataError(f"{origin}: sample {index}, input {name!r} contains NaN or Inf; "
                                "remove or fix that sample")
            sample[name] = array.astype(value.dtype.numpy)
    return samples


def _from_arrays(graph: Graph, arrays: dict[str, np.ndarray], origin: str) -> list[Sample]:
    per_input = {value.name: _as_samples(arrays[value.name], value.name, value.shape, origin)
                 for value in graph.inputs if value.name in arrays}
    missing = [value.name for value in graph.inputs if value.name not in arrays]
    if missing:
        raise DataError(f"{origin}: no data for input(s) {', '.join(missing)}; the file has "
                        f"{', '.join(sorted(arrays)) or 'nothing'}")
    counts = {name: len(items) for name, items in per_input.items()}
    if len(set(counts.values())) > 1:
        raise DataError(f"{origin}: inputs have different sample counts {counts}")
    count = next(iter(counts.values()))
    return [{name: items[i] for name, items in per_input.items()} for i in range(count)]


def _load_image(path: Path, value, preprocessing: ImagePreprocessing) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a declared dependency
        raise UsageError("reading calibration images needs Pillow (pip install pillow)") from None
    layout = preprocessing.layout or value.layout or "NCHW"
    if value.rank != 4 or layout not in ("NCHW", "NHWC"):
        raise UsageError(f"input {value.name!r} ({value.type_str()}) is not an image tensor; give "
                         ".npy / .npz calibration data instead of a folder of images")
    height, width, channels = ((value.shape[2], value.shape[3], value.shape[1]) if layout == "NCHW"
                               else value.shape[1:4])
    try:
        image = Image.open(path)
        image = image.convert("L" if channels == 1 else "RGB").resize((width, height), Image.BILINEAR)
    except OSError as err:
        raise DataError(f"{path}: cannot read this image ({err})") from None
    pixels = np.asarray(image, dtype=np.float32).reshape(height, width, -1)
    if channels == 3 and preprocessing.channel_order.upper() == "BGR":
        pixels = pixels[..., ::-1]
    mean = np.asarray(preprocessing.mean, np.float32)
    std = np.asarray(preprocessing.std, np.float32)
    pixels = (pixels * np.float32(preprocessing.scale) - mean) / std
    return (pixels.transpose(2, 0, 1) if layout == "NCHW" else pixels)[None]


def _from_images(graph: Graph, folder: Path, preprocessing: ImagePreprocessing) -> list[Sample]:
    if len(graph.inputs) != 1:
        raise UsageError(f"{folder}: a folder of images calibrates single-input models only; "
                         f"this one has {len(graph.inputs)} inputs (use an .npz keyed by name)")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise DataError(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)}) in this folder")
    value = graph.inputs[0]
    return [{value.name: _load_image(path, value, preprocessing)} for path in files]


def load_calibration(source: Any, graph: Graph, *,
                     preprocessing: ImagePreprocessing | None = None) -> list[Sample]:
    """Checked calibration samples for ``graph`` from a path or a Python iterable."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        origin = str(path)
        if path.is_dir():
            samples = _from_images(graph, path, preprocessing or ImagePreprocessing())
        elif not path.is_file():
            raise UsageError(f"calibration data {path} does not exist")
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                samples = _from_arrays(graph, {k: archive[k] for k in archive.files}, origin)
        elif path.suffix == ".npy":
            if len(graph.inputs) != 1:
                raise UsageError(f"{path}: an .npy file calibrates single-input models only; use an "
                                 ".npz keyed by input name")
            samples = _from_arrays(graph, {graph.inputs[0].name: np.load(path, allow_pickle=False)},
                                   origin)
        else:
            raise UsageError(f"calibration data {path}: give an .npy / .npz file or a folder of images")
    else:
        origin = "calibration data"
        samples = [_sample_from_item(graph, item, index) for index, item in enumerate(source)]
    samples = _check(graph, samples, origin)
    _warn_about(samples, origin)
    return samples


def _sample_from_item(graph: Graph, item: Any, index: int) -> Sample:
    if isinstance(item, dict):
        return {name: np.asarray(array) for name, array in item.items()}
    if len(graph.inputs) != 1:
        raise DataError(f"calibration sample {index}: give a dict keyed by input name (the model "
                        f"has {len(graph.inputs)} inputs)")
    return {graph.inputs[0].name: np.asarray(item)}


def _warn_about(samples: list[Sample], origin: str) -> None:
    if len(samples) < RECOMMENDED_MIN:
        log.warning("%s: only %d calibration samples; %d-%d are recommended for stable ranges",
                    origin, len(samples), RECOMMENDED_MIN, RECOMMENDED_MAX)
    for name in samples[0]:
        stacked = np.stack([sample[name].astype(np.float64) for sample in samples])
        spread = float(stacked.max() - stacked.min())
        if spread == 0.0:
            log.warning("%s: input %r is constant (%g) in every sample; ranges will be degenerate",
                        origin, name, float(stacked.flat[0]))
        elif len(samples) > 1 and float(stacked.std(axis=0).mean()) < 1e-3 * spread:
            log.warning("%s: the samples of input %r are nearly identical; ranges will describe "
                        "one input only (use varied, representative data)", origin, name)


def calibrate(graph: Graph, samples: list[Sample], *, progress: bool = True,
              seed: int = 0) -> dict[str, ValueSample]:
    """Run the float reference on every sample; a :class:`ValueSample` per float tensor."""
    from rich.progress import Progress

    observed: dict[str, ValueSample] = {}
    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task(f"calibrating {graph.name}", total=len(samples))
        for sample in samples:
            for name, array in run_float(graph, sample, capture=True).items():
                if np.issubdtype(array.dtype, np.floating):
                    observed.setdefault(name, ValueSample(seed + len(observed))).update(array)
            bar.advance(task)
    return observed
