"""Validation inputs and labels: loaded, checked, and shaped as ``N`` samples per input.

Sources:

* random: uniform in ``[low, high)`` (``--range LO,HI``) from ``numpy.random.default_rng(seed)``;
  integer inputs get uniform integers in the range clipped to their dtype;
* a ``.npz`` holding one array per model input, keyed by input name (a single-input model
  also takes a ``.npz`` with exactly one array, whatever its key);
* a ``.npy`` holding the one array of a single-input model;
* labels: a ``.npy`` of ``N`` class indices (integers, or floats holding integers).

Reading, matching and checking the files (format, pickles never loaded, sizes within the
memory budget, the sample axis, dtypes, NaN / Inf) is :mod:`mcudeploy.data_files`, shared
with ``quantize --calib`` and ``generate --test-vectors``. Everything is checked before any
model runs; labels (a 1-D array, count equal to ``N``, integral, within ``[0, classes)``)
raise :class:`~mcudeploy.errors.DataError` naming the file. Random samples must fit the
memory budget too (``--samples 10**9`` is refused, not allocated).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data_files import Samples, arrays_for_inputs, check_array, check_arrays, npz_bytes, read_arrays
from ..errors import DataError, UsageError
from ..ir import DType, Graph
from ..limits import check_budget

_read_file = arrays_for_inputs   # the former private name, still imported by commands
__all__ = ["Samples", "check_array", "check_arrays", "load_labels", "load_samples", "npz_bytes",
           "parse_range", "random_samples"]


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
    if seed < 0:
        raise UsageError(f"--seed {seed}: give a non-negative integer")
    check_budget(count * sum(value.nbytes for value in graph.inputs),
                 f"--samples {count} (random inputs)", UsageError, "give fewer samples")
    rng = np.random.default_rng(seed)
    low, high = value_range
    arrays = {}
    for value in graph.inputs:
        shape = (count, *value.shape)
        if value.dtype == DType.BOOL:
            arrays[value.name] = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif value.dtype.is_float:
            arrays[value.name] = rng.uniform(low, high, size=shape).astype(value.dtype.numpy)
        else:
            info = np.iinfo(value.dtype.numpy)
            lo, hi = max(int(np.ceil(low)), info.min), min(int(np.floor(high)), info.max)
            arrays[value.name] = rng.integers(lo, max(lo, hi) + 1, size=shape).astype(value.dtype.numpy)
    return Samples(arrays, True, f"random, seed {seed}, range [{low:g}, {high:g})")


def load_samples(path: str | Path, graph: Graph) -> Samples:
    """Load and check the ``.npz`` / ``.npy`` data for ``graph``'s inputs."""
    path = Path(path)
    return check_arrays(graph, arrays_for_inputs(path, graph), str(path))


def load_labels(path: str | Path, count: int, classes: int | None) -> np.ndarray:
    """``count`` class indices in ``[0, classes)`` from a ``.npy`` file, as int64."""
    path = Path(path)
    arrays = read_arrays(path, "labels file")
    if len(arrays) != 1:
        raise DataError(f"{path}: a labels file holds one array, this one {len(arrays)}")
    labels = next(iter(arrays.values()))
    if labels.ndim != 1 or labels.dtype.kind not in "iuf":
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
