"""Validation inputs and labels: loaded, checked, and shaped as ``N`` samples per input.

Sources:

* random: uniform in ``[low, high)`` (``--range LO,HI``) from ``numpy.random.default_rng(seed)``;
  integer inputs get uniform integers in the range clipped to their dtype;
* a ``.npz`` holding one array per model input, keyed by input name (a single-input model
  also takes a ``.npz`` with exactly one array, whatever its key);
* a ``.npy`` holding the one array of a single-input model;
* labels: a ``.npy`` of ``N`` class indices (integers, or floats holding integers).

The sample axis: an input declared with shape ``S`` takes data of shape ``(N, *S)``; when
``S`` starts with a batch dimension of 1, ``(N, *S[1:])`` is accepted too (``[1,32,32,3]``
takes ``[N,1,32,32,3]`` or ``[N,32,32,3]``), and data of exactly ``S`` is one unbatched
sample. Every input must hold the same ``N``.

Dtypes: a float input takes any float data (cast to float32); any other input takes exactly
its own dtype (an int8 input takes int8 data: quantize it first). Everything is checked
before any model runs: NaN / Inf, shape, dtype, the sample counts, and labels (count equal to
``N``, integral, within ``[0, classes)``) raise :class:`~mcudeploy.errors.DataError` naming
the input or file.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import DataError, UsageError
from ..ir import Graph, Value


@dataclass
class Samples:
    """``arrays``: input name -> ``(N, *declared_shape)``; ``batched`` is False when every
    array was given with exactly the declared shape (one sample, no sample axis)."""
    arrays: dict[str, np.ndarray]
    batched: bool
    source: str

    @property
    def count(self) -> int:
        return next(iter(self.arrays.values())).shape[0] if self.arrays else 1

    def head(self, count: int) -> "Samples":
        """The first ``count`` samples."""
        return Samples({k: v[:count] for k, v in self.arrays.items()}, True, self.source)


def parse_range(text: str) -> tuple[float, float]:
    """``"LO,HI"`` -> ``(LO, HI)`` with ``LO < HI``, both finite (the ``--range`` option)."""
    parts = text.split(",")
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        low = high = float("nan")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise UsageError(f"--range {text!r}: expected LO,HI with finite numbers LO < HI, e.g. 0,1")
    return low, high


def random_samples(graph: Graph, count: int, seed: int, value_range: tuple[float, float]) -> Samples:
    """``count`` uniform random samples for every input of ``graph``."""
    if count < 1:
        raise UsageError(f"--samples {count}: give at least one sample")
    rng = np.random.default_rng(seed)
    low, high = value_range
    arrays = {}
    for value in graph.inputs:
        shape = (count, *value.shape)
        if value.dtype.is_float:
            arrays[value.name] = rng.uniform(low, high, size=shape).astype(np.float32)
        else:
            info = np.iinfo(value.dtype.numpy)
            lo, hi = max(int(np.ceil(low)), info.min), min(int(np.floor(high)), info.max)
            arrays[value.name] = rng.integers(lo, max(lo, hi) + 1, size=shape).astype(value.dtype.numpy)
    return Samples(arrays, True, f"random, seed {seed}, range [{low:g}, {high:g})")


def _read_file(path: Path, graph: Graph) -> dict[str, np.ndarray]:
    """The raw arrays of ``path`` by input name."""
    if not path.is_file():
        raise UsageError(f"{path}: no such data file")
    names = [value.name for value in graph.inputs]
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.ndarray):
            arrays = {"": loaded}
        else:
            with loaded:
                arrays = {key: loaded[key] for key in loaded.files}
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        raise DataError(f"{path}: not a readable .npy / .npz file ({err})") from None
    if len(arrays) == 1 and (len(names) == 1 or "" in arrays):
        if len(names) != 1:
            raise DataError(f"{path}: one array for a model with {len(names)} inputs "
                            f"({', '.join(names)}); give a .npz keyed by input name")
        return {names[0]: next(iter(arrays.values()))}
    missing, unknown = sorted(set(names) - set(arrays)), sorted(set(arrays) - set(names))
    if missing or unknown:
        raise DataError(f"{path}: arrays {', '.join(sorted(arrays))} do not match the model inputs "
                        f"{', '.join(names)} (missing: {', '.join(missing) or '-'}; unknown: "
                        f"{', '.join(unknown) or '-'}); key the .npz by input name")
    return arrays


def _shaped(array: np.ndarray, value: Value, origin: str) -> tuple[np.ndarray, bool]:
    """``(N, *shape)`` view of ``array`` and whether it had a sample axis."""
    shape = value.shape
    if array.shape == shape:
        return array[None], False
    if array.ndim == len(shape) + 1 and array.shape[1:] == shape:
        return array, True
    if shape and shape[0] == 1 and array.ndim == len(shape) and array.shape[1:] == shape[1:]:
        return array[:, None], True
    accepted = f"[N,{','.join(map(str, shape))}]" + (
        f" or [N,{','.join(map(str, shape[1:]))}]" if shape and shape[0] == 1 else "")
    raise DataError(f"{origin}: data for input {value.name!r} has shape {list(array.shape)}; "
                    f"expected {list(shape)} (one sample) or {accepted} (N samples)")


def check_array(array: np.ndarray, value: Value, origin: str) -> tuple[np.ndarray, bool]:
    """Dtype, shape and finiteness check of one input's data -> ``(N, *shape)``, batched."""
    array = np.asarray(array)
    if value.dtype.is_float and array.dtype.kind == "f":
        array = array.astype(value.dtype.numpy, copy=False)
    elif array.dtype != value.dtype.numpy:
        hint = ("quantize the data with the input's scale and zero point first"
                if value.quant is not None else f"convert it to {value.dtype}")
        raise DataError(f"{origin}: data for input {value.name!r} is {array.dtype}, the input is "
                        f"{value.type_str()}; {hint}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = int(array.size - np.isfinite(array).sum())
        raise DataError(f"{origin}: data for input {value.name!r} has {bad} NaN / Inf value(s) "
                        f"of {array.size}; clean the data")
    return _shaped(array, value, origin)


def check_arrays(graph: Graph, arrays: dict[str, np.ndarray], origin: str) -> Samples:
    """Check every input's data and that all inputs hold the same number of samples."""
    shaped, batched = {}, []
    for value in graph.inputs:
        shaped[value.name], has_axis = check_array(arrays[value.name], value, origin)
        batched.append(has_axis)
    counts = {name: array.shape[0] for name, array in shaped.items()}
    if len(set(counts.values())) > 1:
        raise DataError(f"{origin}: inputs hold different sample counts {counts}; give every "
                        "input the same number of samples")
    if any(count == 0 for count in counts.values()):
        raise DataError(f"{origin}: the data holds no sample")
    return Samples(shaped, any(batched), origin)


def load_samples(path: str | Path, graph: Graph) -> Samples:
    """Load and check the ``.npz`` / ``.npy`` data for ``graph``'s inputs."""
    path = Path(path)
    return check_arrays(graph, _read_file(path, graph), str(path))


def load_labels(path: str | Path, count: int, classes: int | None) -> np.ndarray:
    """``count`` class indices in ``[0, classes)`` from a ``.npy`` file, as int64."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such labels file")
    try:
        labels = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise DataError(f"{path}: not a readable .npy file ({err})") from None
    if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.dtype.kind not in "iuf":
        raise DataError(f"{path}: labels must be a 1-D array of class indices, got "
                        f"{getattr(labels, 'dtype', type(labels))} {list(getattr(labels, 'shape', []))}")
    if labels.size != count:
        raise DataError(f"{path}: {labels.size} labels for {count} samples; give one label per sample")
    if labels.dtype.kind == "f" and not (np.isfinite(labels).all() and (labels == np.round(labels)).all()):
        raise DataError(f"{path}: labels must be whole class indices; found fractional or NaN values")
    labels = labels.astype(np.int64)
    if classes is None:
        raise DataError(f"{path}: labels given, but the model's outputs are not class scores")
    bad = np.flatnonzero((labels < 0) | (labels >= classes))
    if bad.size:
        raise DataError(f"{path}: label {int(labels[bad[0]])} (sample {int(bad[0])}) is outside the "
                        f"model's {classes} classes [0, {classes - 1}]")
    return labels
