"""Calibration observers: from the values a tensor took on calibration data to a range
``[low, high]`` that the scheme (:mod:`.scheme`) turns into a scale and zero point.

Every observer tracks the exact minimum and maximum and keeps a bounded, seeded random
sample of the values (``ValueSample``, at most ``MAX_SAMPLE`` numbers: each batch adds up
to ``PER_UPDATE`` of its elements; when full, half the sample is dropped at random). The
range methods:

* ``minmax``: ``[min, max]`` exactly;
* ``percentile``: ``[P(100 - p), P(p)]`` of the sample (default ``p = 99.99``), inside
  ``[min, max]``; clips rare outliers;
* ``entropy`` (KL divergence, TensorRT's method; details as in onnxruntime): histogram
  ``|x|`` over ``[0, max|x|]`` into 2048 bins, the exact-zero spike of bin 0 replaced by bin
  1's count (a ReLU output's zeros are exact whatever the range); for each threshold ``t``
  (bin ``i``, from the larger of bin 128 and the bin of the ``P(99.99)`` of ``|x|`` up: KL
  alone clips the sparse large values of ReLU / ReLU6 outputs, whose mass is tiny but whose
  signal is not), the reference ``P`` is the first ``i`` bins with the tail folded into the
  last, ``Q`` is the first ``i`` bins merged into 128 levels and spread back over the bins
  where ``P`` is non-zero; empty bins of both get ``1e-4`` (taken from the others); pick ``t``
  minimising ``KL(P || Q) = sum P log(P / Q)``, then ``[max(min, -t), min(max, t)]``;
* ``mse``: ``[a * min, b * max]`` minimising the mean squared int8 (asymmetric)
  quantize-dequantize error of (up to 32768 values of) the sample; ``a`` and ``b`` on a
  geometric grid over ``[0.01, 1]``: first ``a = b``, then two rounds of coordinate descent.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

MAX_SAMPLE = 1 << 18
PER_UPDATE = 1 << 14
HISTOGRAM_BINS = 2048
KL_LEVELS = 128
KL_FIRST_BIN = 128
KL_EPSILON = 1e-4
MSE_SMALLEST_FACTOR = 0.01


class ValueSample:
    """Exact min / max plus a bounded random sample of the observed values."""

    def __init__(self, seed: int = 0) -> None:
        self.low = np.inf
        self.high = -np.inf
        self.count = 0
        self._parts: list[np.ndarray] = []
        self._size = 0
        self._rng = np.random.default_rng(seed)

    def update(self, array: np.ndarray) -> None:
        flat = np.asarray(array, dtype=np.float32).reshape(-1)
        if flat.size == 0:
            return
        self.low = min(self.low, float(flat.min()))
        self.high = max(self.high, float(flat.max()))
        self.count += flat.size
        if flat.size > PER_UPDATE:
            flat = flat[self._rng.choice(flat.size, PER_UPDATE, replace=False)]
        self._parts.append(flat.copy())
        self._size += flat.size
        if self._size > MAX_SAMPLE:
            merged = self.values()
            keep = self._rng.choice(merged.size, merged.size // 2, replace=False)
            self._parts, self._size = [merged[keep]], merged.size // 2

    def values(self) -> np.ndarray:
        return np.concatenate(self._parts) if self._parts else np.zeros(0, np.float32)

    @property
    def empty(self) -> bool:
        return self.count == 0


def minmax_range(sample: ValueSample) -> tuple[float, float]:
    return sample.low, sample.high


def percentile_range(sample: ValueSample, percentile: float = 99.99) -> tuple[float, float]:
    values = sample.values()
    low, high = np.percentile(values, [100.0 - percentile, percentile])
    return max(sample.low, float(low)), min(sample.high, float(high))


def _smoothed(counts: np.ndarray, epsilon: float = KL_EPSILON) -> np.ndarray | None:
    """``counts`` with ``epsilon`` in every empty bin, taken evenly from the others (so that
    ``KL`` stays finite); ``None`` when nothing is left to take from."""
    empty = counts == 0
    filled = counts.size - int(empty.sum())
    if filled == 0 or epsilon * empty.sum() / filled >= counts[~empty].min():
        return None
    return np.where(empty, epsilon, counts - epsilon * empty.sum() / filled)


def _kl_divergence(histogram: np.ndarray, index: int, levels: int = KL_LEVELS) -> float:
    """``KL(P || Q)`` of threshold bin ``index`` (see module docstring)."""
    clipped = histogram[:index]
    reference = clipped.copy()
    reference[-1] += histogram[index:].sum()
    nonzero = reference > 0
    starts = (np.arange(levels) * index) // levels
    sums = np.add.reduceat(clipped, starts)
    used = np.add.reduceat(nonzero.astype(np.float64), starts)
    per_bin = np.divide(sums, used, out=np.zeros_like(sums), where=used > 0)
    candidate = np.repeat(per_bin, np.diff(np.append(starts, index))) * nonzero
    p, q = _smoothed(reference), _smoothed(candidate)
    if p is None or q is None:
        return np.inf
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def entropy_range(sample: ValueSample, bins: int = HISTOGRAM_BINS,
                  percentile: float = 99.99) -> tuple[float, float]:
    peak = max(abs(sample.low), abs(sample.high))
    magnitudes = np.abs(sample.values())
    if peak == 0.0 or magnitudes.size == 0:
        return sample.low, sample.high
    histogram, edges = np.histogram(magnitudes, bins=bins, range=(0.0, peak))
    histogram = histogram.astype(np.float64)
    histogram[0] = histogram[1]
    floor = float(np.percentile(magnitudes, percentile))
    first = min(max(KL_FIRST_BIN, int(np.searchsorted(edges, floor))), bins)
    divergences = [_kl_divergence(histogram, index) for index in range(first, bins + 1)]
    threshold = float(edges[first + int(np.argmin(divergences))])
    return max(sample.low, -threshold), min(sample.high, threshold)


def quantization_error(values: np.ndarray, low: float, high: float, levels: int = 256) -> float:
    """Mean squared error of asymmetric ``levels``-level fake quantization over [low, high]."""
    low, high = min(low, 0.0), max(high, 0.0)
    if high - low <= 0:
        return float(np.mean(values.astype(np.float64) ** 2))
    scale = (high - low) / (levels - 1)
    zero_point = np.round(-low / scale)
    quantized = np.clip(np.round(values / scale) + zero_point, 0, levels - 1)
    return float(np.mean(((quantized - zero_point) * scale - values) ** 2))


def mse_range(sample: ValueSample, steps: int = 60, max_values: int = 1 << 15) -> tuple[float, float]:
    values = sample.values().astype(np.float64)
    if values.size > max_values:
        values = np.random.default_rng(0).choice(values, max_values, replace=False)
    factors = np.geomspace(MSE_SMALLEST_FACTOR, 1.0, steps)
    scale = min(factors, key=lambda f: quantization_error(values, f * sample.low, f * sample.high))
    low, high = scale * sample.low, scale * sample.high
    for _ in range(2):  # coordinate descent: the upper end, then the lower end
        high = min((f * sample.high for f in factors),
                   key=lambda h: quantization_error(values, low, h)) if sample.high > 0 else high
        low = min((f * sample.low for f in factors),
                  key=lambda l: quantization_error(values, l, high)) if sample.low < 0 else low
    return float(low), float(high)


RANGE_METHODS: dict[str, Callable[[ValueSample], tuple[float, float]]] = {
    "minmax": minmax_range,
    "percentile": percentile_range,
    "entropy": entropy_range,
    "mse": mse_range,
}


def observed_range(sample: ValueSample, method: str = "minmax") -> tuple[float, float]:
    """The range ``method`` (a key of :data:`RANGE_METHODS`) picks for ``sample``."""
    if sample.empty:
        return 0.0, 0.0
    return RANGE_METHODS[method](sample)


def clipped_fraction(sample: ValueSample, low: float, high: float) -> float:
    """Share of sampled values outside ``[low, high]`` (they saturate when quantized)."""
    values = sample.values()
    if values.size == 0:
        return 0.0
    return float(np.mean((values < low) | (values > high)))
