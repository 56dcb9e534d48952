"""Calibration observers: from the values a tensor took on calibration data to a range
``[low, high]`` that the scheme (:mod:`.scheme`) turns into a scale and zero point.

Every observer tracks the exact minimum and maximum and keeps a bounded, seeded random
sample of the values (``ValueSample``, at most ``MAX_SAMPLE`` numbers: each batch adds up
to ``PER_UPDATE`` of its elements; when full, half the sample is dropped at random). The
range methods:

* ``minmax``: ``[min, max]`` exactly;
* ``percentile``: ``[P(100 - p), P(p)]`` of the sample (default ``p = 99.99``), inside
  ``[min, max]``; clips rare outliers;
* ``entropy`` (KL divergence, TensorRT's method): histogram the non-zero ``|x|`` into 2048 bins; for each
  threshold ``t`` (bin ``i``), the reference ``P`` is the first ``i`` bins with the tail
  folded into the last, ``Q`` is the first ``i`` bins (tail dropped) merged into 128 levels (256 for a one-signed tensor) and spread back over the
  non-empty bins; pick ``t`` minimising ``KL(P || Q) = sum P log(P / Q)``, then
  ``[max(min, -t), min(max, t)]``;
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


def _kl_divergence(reference: np.ndarray, clipped: np.ndarray, levels: int) -> float:
    """``KL(P || Q)``: ``P`` = ``reference`` (tail folded into its last bin), ``Q`` = the
    in-range bins ``clipped`` merged into ``levels`` levels and spread back over the
    non-empty bins (so ``Q`` misses the folded tail, and clipping costs divergence)."""
    nonzero = reference > 0
    candidate = np.zeros_like(clipped)
    for chunk in np.array_split(np.arange(clipped.size), levels):
        mask = clipped[chunk] > 0
        used = mask.sum()
        if used:
            candidate[chunk[mask]] = clipped[chunk].sum() / used
    p = reference / reference.sum()
    q = candidate / max(candidate.sum(), 1e-12)
    return float(np.sum(p[nonzero] * np.log(p[nonzero] / np.maximum(q[nonzero], 1e-12))))


def entropy_range(sample: ValueSample, bins: int = HISTOGRAM_BINS) -> tuple[float, float]:
    # A one-signed tensor (ReLU output) spends all 256 int8 levels on one side.
    levels = 2 * KL_LEVELS if sample.low >= 0 or sample.high <= 0 else KL_LEVELS
    # Exact zeros (the ReLU spike) are left out: 0.0 is exactly representable whatever the
    # range, and a spike in bin 0 makes every coarse Q look bad, biasing KL towards tiny t.
    magnitudes = np.abs(sample.values())
    magnitudes = magnitudes[magnitudes > 0]
    peak = float(magnitudes.max()) if magnitudes.size else 0.0
    if peak == 0.0:
        return sample.low, sample.high
    histogram, edges = np.histogram(magnitudes, bins=bins, range=(0.0, peak))
    histogram = histogram.astype(np.float64)
    best, best_index = np.inf, bins
    for index in range(levels, bins + 1, 16):
        clipped = histogram[:index]
        reference = clipped.copy()
        reference[-1] += histogram[index:].sum()
        divergence = _kl_divergence(reference, clipped, levels)
        if divergence < best:
            best, best_index = divergence, index
    threshold = float(edges[best_index])
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
