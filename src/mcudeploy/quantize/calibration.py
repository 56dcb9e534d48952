"""Calibration data: load, check, and run through the float model to observe every tensor.

Sources (:func:`load_calibration`), each giving a list of samples ``{input name: array of the
input's declared shape}``:

* ``.npy``: one array for a single-input model, ``(N, *shape)`` (or ``(N, *shape[1:])`` when
  the model's batch dimension is 1, or one sample of exactly ``shape``);
* ``.npz``: one such array per input, keyed by input name;
* a folder of images with an :class:`ImagePreprocessing` (resize, ``scale``, mean / std,
  RGB / BGR, NCHW / NHWC): ``x = (pixels * scale - mean) / std`` per channel (mean / std:
  one value or one per channel); images over :data:`MAX_IMAGE_PIXELS` are refused from
  their header, before decoding (decompression bombs);
* any Python iterable of dicts (or of arrays, for a single-input model) through the API.

All data is checked before any work, by the rules ``run --inputs`` and ``validate --data``
apply (:mod:`mcudeploy.data_files`: file format, no pickles, sizes within the memory budget,
exactly the model's inputs, dtype, shape, NaN / Inf -> :class:`DataError`). Fewer
than ``RECOMMENDED_MIN`` samples logs a warning; samples that all look alike (no spread
between them, or a constant input) log a note, since ranges then describe one input only.
:func:`calibrate` streams every sample through the float model (:mod:`.forward`) with a
progress bar and feeds every tensor to a :class:`~.observers.TensorObserver`: memory is one
sample's tensors per thread (onnxruntime: all of them; numpy: the live ones) plus the
observers' fixed state, whatever the number of samples.
"""
from __future__ import annotations

import logging
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data_files import arrays_for_inputs, check_array, check_arrays
from ..errors import DataError, GraphError, UnsupportedError, UsageError
from ..exporters.onnx_run import OnnxRuntimeRanges, onnxruntime_ranges
from ..extras import require
from ..ir import DType, Graph
from ..progress import progress_bar
from .forward import Runner, float_runner
from .observers import TensorObserver

log = logging.getLogger(__name__)

RECOMMENDED_MIN, RECOMMENDED_MAX = 100, 500
CALIBRATION_THREADS = 2      # samples in flight at once (each thread: one sample's tensors)
MAX_IMAGE_PIXELS = 64 * 1024 * 1024   # 8192 x 8192; larger is refused before decoding
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


def _check(graph: Graph, samples: list[Sample], origin: str) -> list[Sample]:
    """Every sample holds exactly the model's inputs, each one sample of the input's shape,
    with the dtype / NaN rules of :func:`mcudeploy.data_files.check_array`."""
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
            checked, batched = check_array(array, value, f"{origin}: sample {index}")
            if batched:
                raise DataError(f"{origin}: sample {index}, input {name!r} has shape "
                                f"{list(np.shape(array))}; one sample is {value.type_str()}")
            sample[name] = checked[0]
    return samples


def _from_file(graph: Graph, path: Path) -> list[Sample]:
    """The samples of a ``.npy`` / ``.npz`` file, read and checked as ``run --inputs`` and
    ``validate --data`` read theirs (:mod:`mcudeploy.data_files`)."""
    samples = check_arrays(graph, arrays_for_inputs(path, graph, "calibration file"), str(path))
    return [{name: array[index] for name, array in samples.arrays.items()}
            for index in range(samples.count)]


def _read_image(path: Path, width: int, height: int, channels: int):
    """The image at ``path`` converted to L / RGB and resized; its header is checked first."""
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)   # our own limit is lower
            with Image.open(path) as image:
                if image.width * image.height > MAX_IMAGE_PIXELS:
                    raise DataError(f"{path}: the image declares {image.width} x {image.height} pixels, "
                                    f"more than {MAX_IMAGE_PIXELS:,} (a decompression bomb?); give "
                                    "images near the model's input size")
                # Pillow's type hints omit the module constant, which every Pillow >= 9 has
                # (Image.Resampling only exists from 9.1 on, and pyproject allows 9.0)
                return image.convert("L" if channels == 1 else "RGB").resize(
                    (width, height), Image.BILINEAR)  # type: ignore[attr-defined]
    except DataError:
        raise
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError) as err:
        raise DataError(f"{path}: cannot read this image ({err})") from None


def _load_image(path: Path, value, preprocessing: ImagePreprocessing) -> np.ndarray:
    require("PIL", "images", "calibration from an image folder")   # read by _read_image
    layout = preprocessing.layout or value.layout or "NCHW"
    if value.rank != 4 or layout not in ("NCHW", "NHWC"):
        raise UsageError(f"input {value.name!r} ({value.type_str()}) is not an image tensor; give "
                         ".npy / .npz calibration data instead of a folder of images")
    height, width, channels = ((value.shape[2], value.shape[3], value.shape[1]) if layout == "NCHW"
                               else value.shape[1:4])
    _check_channels(preprocessing, channels, value)
    image = _read_image(path, width, height, channels)
    pixels = np.asarray(image, dtype=np.float32).reshape(height, width, -1)
    if channels == 3 and preprocessing.channel_order.upper() == "BGR":
        pixels = pixels[..., ::-1]
    mean = np.asarray(preprocessing.mean, np.float32)
    std = np.asarray(preprocessing.std, np.float32)
    pixels = (pixels * np.float32(preprocessing.scale) - mean) / std
    return (pixels.transpose(2, 0, 1) if layout == "NCHW" else pixels)[None]


def _check_channels(preprocessing: ImagePreprocessing, channels: int, value) -> None:
    """``--mean`` / ``--std`` give one value, or one per channel of the input."""
    for option, values in (("--mean", preprocessing.mean), ("--std", preprocessing.std)):
        if len(values) not in (1, channels):
            raise UsageError(f"{option} {','.join(map(str, values))}: {len(values)} values for input "
                             f"{value.name!r} with {channels} channel(s); give 1 or {channels}")
        if not all(np.isfinite(values)) or (option == "--std" and 0 in values):
            raise UsageError(f"{option} {','.join(map(str, values))}: give finite"
                             f"{' non-zero' if option == '--std' else ''} numbers")


def _from_images(graph: Graph, folder: Path, preprocessing: ImagePreprocessing) -> list[Sample]:
    if len(graph.inputs) != 1:
        raise UsageError(f"{folder}: a folder of images calibrates single-input models only; "
                         f"this one has {len(graph.inputs)} inputs (use an .npz keyed by name)")
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not files:
        raise DataError(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)}) in this folder")
    value = graph.inputs[0]
    return [{value.name: _load_image(path, value, preprocessing)} for path in files]


def check_calibration_graph(graph: Graph) -> None:
    """What calibration needs of the float model: float32 float inputs (the QDQ model
    quantizes float32) and finite float constants (NaN / Inf weights, or a negative
    BatchNormalization variance folded into them, make every range NaN)."""
    for value in graph.inputs:
        if value.dtype.is_float and value.dtype != DType.FLOAT32:
            raise UnsupportedError(f"input {value.name!r} is {value.type_str()}; quantization "
                                   "calibrates float32 models (export the model with float32 inputs)")
    for value in graph.values():
        if value.const is not None and value.dtype.is_float and not np.isfinite(value.const).all():
            bad = int(value.const.size - np.isfinite(value.const).sum())
            raise GraphError(f"constant {value.name!r} ({value.type_str()}) holds {bad} NaN / Inf "
                             "value(s) (after folding BatchNormalization: a negative variance?); "
                             "a model with non-finite weights cannot be quantized")


def load_calibration(source: Any, graph: Graph, *,
                     preprocessing: ImagePreprocessing | None = None) -> list[Sample]:
    """Checked calibration samples for ``graph`` from a path or a Python iterable."""
    check_calibration_graph(graph)
    if isinstance(source, (str, Path)):
        path = Path(source)
        origin = str(path)
        if path.is_dir():
            samples = _from_images(graph, path, preprocessing or ImagePreprocessing())
        elif not path.exists():
            raise UsageError(f"calibration data {path} does not exist")
        elif not path.is_file():
            raise UsageError(f"calibration data {path} is not a regular file (a device or a pipe); give an "
                             ".npy / .npz file or a folder of images")
        elif path.suffix.lower() in (".npz", ".npy"):
            samples = _from_file(graph, path)
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
    """Warnings about too few, constant or look-alike samples, computed sample by sample
    (running per-element mean and variance, Welford), so they cost one input's memory."""
    if len(samples) < RECOMMENDED_MIN:
        log.warning("%s: only %d calibration samples; %d-%d are recommended for stable ranges",
                    origin, len(samples), RECOMMENDED_MIN, RECOMMENDED_MAX)
    for name in samples[0]:
        low, high = np.inf, -np.inf
        mean = np.zeros(samples[0][name].shape)
        squares = np.zeros_like(mean)
        for count, sample in enumerate(samples, start=1):
            array = sample[name].astype(np.float64)
            low, high = min(low, float(array.min())), max(high, float(array.max()))
            delta = array - mean
            mean += delta / count
            squares += delta * (array - mean)
        spread = high - low
        if spread == 0.0:
            log.warning("%s: input %r is constant (%g) in every sample; ranges will be degenerate",
                        origin, name, low)
        elif len(samples) > 1 and float(np.sqrt(squares / len(samples)).mean()) < 1e-3 * spread:
            log.warning("%s: the samples of input %r are nearly identical; ranges will describe "
                        "one input only (use varied, representative data)", origin, name)


def _observe(graph: Graph, observed: dict[str, TensorObserver], histogram: bool, index: int):
    """The :func:`~.forward.forward` visitor feeding every float tensor to its observer."""
    def visit(value, array: np.ndarray) -> None:
        if not np.issubdtype(array.dtype, np.floating):
            return
        observer = observed.get(value.name)
        if observer is None:
            observer = observed[value.name] = TensorObserver(histogram)
        if not observer.update(array):
            raise _not_finite(graph, value.name, index)
    return visit


def _not_finite(graph: Graph, name: str, index: int) -> GraphError:
    return GraphError(f"{graph.name}: tensor {name!r} is NaN / Inf on calibration sample {index}: the float "
                      "model overflows (weights too large?) or divides by zero; it cannot be quantized")


def _observe_ranges(graph: Graph, observed: dict[str, TensorObserver], ranges: dict, index: int) -> None:
    """Feed the min / max observers from :class:`~mcudeploy.exporters.onnx_run.OnnxRuntimeRanges`."""
    for name, (low, high, finite, count) in ranges.items():
        if not finite:
            raise _not_finite(graph, name, index)
        observer = observed.get(name)
        if observer is None:
            observer = observed[name] = TensorObserver(histogram=False)
        observer.update_range(low, high, count)


def _calibrate_part(graph: Graph, runner: Runner | OnnxRuntimeRanges, samples: list[Sample], indices: range,
                    histogram: bool, advance) -> dict[str, TensorObserver]:
    observed: dict[str, TensorObserver] = {}
    for index in indices:
        if isinstance(runner, OnnxRuntimeRanges):
            _observe_ranges(graph, observed, runner(samples[index]), index)
        else:
            runner(samples[index], visit=_observe(graph, observed, histogram, index))
        advance()
    return observed


def calibrate(graph: Graph, samples: list[Sample], *, progress: bool = True, histogram: bool = True,
              threads: int | None = None, runner: Runner | None = None) -> dict[str, TensorObserver]:
    """Stream every sample through the float model (``runner``; by default onnxruntime when
    it can - with ``histogram=False`` reducing each tensor to its min / max inside it,
    :func:`~mcudeploy.exporters.onnx_run.onnxruntime_ranges` - else numpy,
    :func:`~.forward.float_runner`): a
    :class:`TensorObserver` per float tensor (``histogram=False``: min / max only, what the
    minmax method reads). ``threads`` (default :data:`CALIBRATION_THREADS`, at most the CPU
    count) run interleaved samples at once, each with its own observers, merged at the end
    (exact: the result does not depend on the number of threads); numpy's copies and
    BLAS's products release the interpreter lock. Memory: ``threads`` samples' live tensors
    plus the observers, whatever the number of samples."""
    count = max(1, min(threads or CALIBRATION_THREADS, os.cpu_count() or 1, len(samples)))
    chosen: Runner | OnnxRuntimeRanges | None = runner
    if chosen is None and not histogram:   # min / max only: reduced inside onnxruntime
        chosen = onnxruntime_ranges(graph)
    if chosen is None:
        chosen = float_runner(graph)
    with progress_bar(f"calibrating {graph.name}", len(samples), enabled=progress) as advance:
        if count == 1:
            parts = [_calibrate_part(graph, chosen, samples, range(len(samples)), histogram, advance)]
        else:
            with ThreadPoolExecutor(count) as pool:
                futures = [pool.submit(_calibrate_part, graph, chosen, samples, range(start, len(samples), count),
                                       histogram, advance) for start in range(count)]
                parts = [future.result() for future in futures]
    observed = parts[0]
    for part in parts[1:]:
        for name, observer in part.items():
            if name in observed:
                observed[name].merge(observer)
            else:
                observed[name] = observer
    return {name: observed[name] for name in sorted(observed, key=_order(graph))}


def _order(graph: Graph):
    """Sort key: the tensors in graph order (inputs, then node outputs)."""
    position = {v.name: i for i, v in enumerate(graph.inputs)}
    for node in graph.nodes:
        for value in node.outputs:
            position.setdefault(value.name, len(position))
    return lambda name: position.get(name, len(position))
