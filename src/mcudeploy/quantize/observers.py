"""Calibration observers: from the values a tensor took on calibration data to a range
``[low, high]`` that the scheme (:mod:`.scheme`) turns into a scale and zero point.

A :class:`TensorObserver` is updated once per calibration sample and never holds the
values: its state is the exact minimum, maximum, count and number of exact zeros, plus
(``histogram=True``, for every method but ``minmax``) a histogram of the values with
``FINE_BINS`` bins per sign over ``[-R, R]`` (bin width ``w = R / FINE_BINS``, bin edges on
multiples of ``w``, exact zeros counted apart). ``R`` is the power of two above the first
sample's ``max|x|`` and doubles whenever a sample reaches it; doubling merges neighbouring
bins pairwise, which is exact, so the histogram is the same whatever the order of the
samples, and observers of different samples merge exactly (:meth:`TensorObserver.merge`:
calibration runs samples on several threads). The final ``R`` is at most ``2 max|x|``, so
at least ``FINE_BINS / 2`` bins cover ``[0, max|x|]``. Quantiles and
re-binned histograms read the counts as uniform within a bin. Memory per tensor:
``2 * FINE_BINS`` counts (256 KiB), whatever the number of samples.

The range methods:

* ``minmax``: ``[min, max]`` exactly (no histogram);
* ``percentile``: ``[P(100 - p), P(p)]`` of all values (default ``p = 99.99``), inside
  ``[min, max]``; clips rare outliers;
* ``entropy`` (KL divergence, TensorRT's method; details as in onnxruntime): a histogram
  of ``|x|`` over ``[0, max|x|]`` in 2048 bins (re-binned from the fine one), the
  exact-zero spike of bin 0 replaced by bin 1's count (a ReLU output's zeros are exact
  whatever the range); for each threshold ``t`` (bin ``i``, from the larger of bin 128 and
  the bin of the ``P(99.99)`` of ``|x|`` up: KL alone clips the sparse large values of ReLU
  / ReLU6 outputs, whose mass is tiny but whose signal is not), the reference ``P`` is the
  first ``i`` bins with the tail folded into the last, ``Q`` is the first ``i`` bins merged
  into 128 levels and spread back over the bins where ``P`` is non-zero; empty bins of both
  get ``1e-4`` (taken from the others); pick ``t`` minimising ``KL(P || Q) = sum P log(P /
  Q)``, then ``[max(min, -t), min(max, t)]``;
* ``mse``: ``[a * min, b * max]`` minimising the mean squared int8 (asymmetric)
  quantize-dequantize error over the histogram (each bin's count at its centre, exact
  zeros at 0); ``a`` and ``b`` on a geometric grid over ``[0.01, 1]``: first ``a = b``, then
  two rounds of coordinate descent.

Before histograms, the observers kept a random sample of at most 2^18 values per tensor
(2^14 per update); ``percentile``, ``entropy`` and ``mse`` now see every value, to within
one fine bin (``max|x| / 8192`` at worst, a sixtieth of an int8 step of the full range),
so their ranges move by what that sampling changed (``tests/test_quantize_stream.py``).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

FINE_BINS = 1 << 14       # per sign
HISTOGRAM_BINS = 2048
KL_LEVELS = 128
KL_FIRST_BIN = 128
KL_EPSILON = 1e-4
MSE_SMALLEST_FACTOR = 0.01


class TensorObserver:
    """Exact min / max / count / zeros of a tensor's values and (``histogram``) their
    histogram (module docstring)."""

    def __init__(self, histogram: bool = True) -> None:
        self.low, self.high = np.inf, -np.inf
        self.count = 0
        self.zeros = 0
        self.histogram = histogram
        self.bound = 0.0                                  # R
        self.counts: np.ndarray | None = np.zeros(2 * FINE_BINS, np.int64) if histogram else None

    @property
    def empty(self) -> bool:
        return self.count == 0

    def _fine_counts(self) -> np.ndarray:
        """The fine histogram's counts (kept only by an observer made with ``histogram=True``)."""
        if self.counts is None:
            raise RuntimeError("this observer keeps no histogram (made with histogram=False)")
        return self.counts

    def update(self, array: np.ndarray) -> bool:
        """Observe ``array``; False (nothing observed) when it holds a NaN or an Inf: its
        min or max is then not finite (NaN propagates through both), so no separate
        finiteness pass over the values is needed."""
        flat = np.ravel(np.asarray(array), order="K")   # memory order: a transposed view stays a view
        if flat.size == 0:
            return True
        low, high = float(flat.min()), float(flat.max())
        if not (math.isfinite(low) and math.isfinite(high)):
            return False
        self.low, self.high = min(self.low, low), max(self.high, high)
        self.count += flat.size
        if self.histogram:
            self._add(flat.astype(np.float32, copy=False), max(abs(low), abs(high)))
        return True

    def update_range(self, low: float, high: float, count: int) -> None:
        """Observe a tensor of ``count`` finite values known only by its min and max (an
        observer without histogram: what the minmax method reads)."""
        if self.histogram:
            raise RuntimeError("an observer with a histogram needs the values (use update)")
        if count:
            self.low, self.high = min(self.low, low), max(self.high, high)
            self.count += count

    def _add(self, flat: np.ndarray, peak: float) -> None:
        nonzero = flat[flat != 0]
        self.zeros += flat.size - nonzero.size
        if nonzero.size == 0:
            return
        if self.bound == 0.0:
            self.bound = math.ldexp(1.0, math.frexp(peak)[1])   # the power of two above peak
        while peak >= self.bound:
            self._double()
        scale = np.float64(FINE_BINS) / self.bound
        index = np.floor(nonzero.astype(np.float64) * scale).astype(np.int64) + FINE_BINS
        np.clip(index, 0, 2 * FINE_BINS - 1, out=index)
        counts = self._fine_counts()
        counts += np.bincount(index, minlength=2 * FINE_BINS)

    def _double(self) -> None:
        self.counts, self.bound = _doubled(self._fine_counts()), self.bound * 2.0

    def merge(self, other: "TensorObserver") -> None:
        """Add ``other``'s observations (of other samples): exact, since both bounds are
        powers of two and doubling keeps every bin edge."""
        if other.empty:
            return
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)
        self.count += other.count
        self.zeros += other.zeros
        if not self.histogram or other.bound == 0.0:
            return
        counts, bound = other._fine_counts(), other.bound
        if self.bound == 0.0:
            self.bound = bound
        while self.bound < bound:
            self._double()
        while bound < self.bound:
            counts, bound = _doubled(counts), bound * 2.0
        self.counts = self._fine_counts() + counts

    # -- views of the histogram ---------------------------------------------------------------
    def signed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(edges, counts)`` over ``[-R, R]`` (zeros included in the bin starting at 0)."""
        counts = self._fine_counts().astype(np.float64)
        counts[FINE_BINS] += self.zeros
        return np.linspace(-self.bound, self.bound, 2 * FINE_BINS + 1), counts

    def magnitudes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(edges, counts)`` of ``|x|`` over ``[0, R]``, zeros in the first bin."""
        fine = self._fine_counts()
        counts = (fine[FINE_BINS:] + fine[:FINE_BINS][::-1]).astype(np.float64)
        counts[0] += self.zeros
        return np.linspace(0.0, self.bound, FINE_BINS + 1), counts


def _doubled(counts: np.ndarray) -> np.ndarray:
    """The counts over ``[-2R, 2R]``: bins ``2k, 2k + 1`` of each sign merge (every new edge
    is an old one)."""
    negative, positive = counts[:FINE_BINS][::-1], counts[FINE_BINS:]
    merged = [side.reshape(-1, 2).sum(axis=1) for side in (negative, positive)]
    pad = np.zeros(FINE_BINS // 2, np.int64)
    return np.concatenate([np.concatenate([merged[0], pad])[::-1], merged[1], pad])


def _quantile(edges: np.ndarray, counts: np.ndarray, fraction: float) -> float:
    """The value below which ``fraction`` of the counts lie (uniform within a bin)."""
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    return float(np.interp(fraction * cumulative[-1], cumulative, edges))


def _rebinned(edges: np.ndarray, counts: np.ndarray, new_edges: np.ndarray) -> np.ndarray:
    """``counts`` over ``edges`` redistributed onto ``new_edges`` (uniform within a bin)."""
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    return np.diff(np.interp(new_edges, edges, cumulative))


def minmax_range(observer: TensorObserver) -> tuple[float, float]:
    return observer.low, observer.high


def _require_histogram(observer: TensorObserver, method: str) -> None:
    if not observer.histogram:
        raise ValueError(f"the {method} range needs an observer with a histogram")


def percentile_range(observer: TensorObserver, percentile: float = 99.99) -> tuple[float, float]:
    _require_histogram(observer, "percentile")
    if observer.bound == 0.0:
        return observer.low, observer.high
    edges, counts = observer.signed()
    low = _quantile(edges, counts, 1.0 - percentile / 100.0)
    high = _quantile(edges, counts, percentile / 100.0)
    return max(observer.low, low), min(observer.high, high)


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


def entropy_range(observer: TensorObserver, bins: int = HISTOGRAM_BINS,
                  percentile: float = 99.99) -> tuple[float, float]:
    _require_histogram(observer, "entropy")
    peak = max(abs(observer.low), abs(observer.high))
    if peak == 0.0 or observer.bound == 0.0:
        return observer.low, observer.high
    fine_edges, fine_counts = observer.magnitudes()
    edges = np.linspace(0.0, peak, bins + 1)
    histogram = _rebinned(fine_edges, fine_counts, edges)
    histogram[0] = histogram[1]
    floor = _quantile(fine_edges, fine_counts, percentile / 100.0)
    first = min(max(KL_FIRST_BIN, int(np.searchsorted(edges, floor))), bins)
    divergences = [_kl_divergence(histogram, index) for index in range(first, bins + 1)]
    threshold = float(edges[first + int(np.argmin(divergences))])
    return max(observer.low, -threshold), min(observer.high, threshold)


def quantization_error(values: np.ndarray, low: float, high: float, levels: int = 256,
                       weights: np.ndarray | None = None) -> float:
    """Mean squared error of asymmetric ``levels``-level fake quantization over [low, high]
    (``weights``: how many values each entry of ``values`` stands for)."""
    values = np.asarray(values, np.float64)
    low, high = min(low, 0.0), max(high, 0.0)
    if high - low <= 0:
        return float(np.average(values ** 2, weights=weights))
    scale = (high - low) / (levels - 1)
    zero_point = np.round(-low / scale)
    quantized = np.clip(np.round(values / scale) + zero_point, 0, levels - 1)
    return float(np.average(((quantized - zero_point) * scale - values) ** 2, weights=weights))


def mse_range(observer: TensorObserver, steps: int = 60) -> tuple[float, float]:
    _require_histogram(observer, "mse")
    edges, counts = observer.signed()
    centres = np.append((edges[:-1] + edges[1:]) / 2, 0.0)
    counts = np.append(counts, float(observer.zeros))
    counts[FINE_BINS] -= observer.zeros
    used = counts > 0
    values, weights = centres[used], counts[used]
    low_end, high_end = observer.low, observer.high

    def error(low: float, high: float) -> float:
        return quantization_error(values, low, high, weights=weights)

    factors = np.geomspace(MSE_SMALLEST_FACTOR, 1.0, steps)
    scale = min(factors, key=lambda f: error(f * low_end, f * high_end))
    low, high = scale * low_end, scale * high_end
    for _ in range(2):  # coordinate descent: the upper end, then the lower end
        high = min((f * high_end for f in factors), key=lambda h: error(low, h)) if high_end > 0 else high
        low = min((f * low_end for f in factors), key=lambda lo: error(lo, high)) if low_end < 0 else low
    return float(low), float(high)


RANGE_METHODS: dict[str, Callable[[TensorObserver], tuple[float, float]]] = {
    "minmax": minmax_range,
    "percentile": percentile_range,
    "entropy": entropy_range,
    "mse": mse_range,
}


def needs_histogram(method: str) -> bool:
    """Whether range ``method`` reads the observer's histogram (every one but minmax)."""
    return method != "minmax"


def observed_range(observer: TensorObserver, method: str = "minmax") -> tuple[float, float]:
    """The range ``method`` (a key of :data:`RANGE_METHODS`) picks for ``observer``."""
    if observer.empty:
        return 0.0, 0.0
    return RANGE_METHODS[method](observer)


def clipped_fraction(observer: TensorObserver, low: float, high: float) -> float:
    """Share of the observed values outside ``[low, high]`` (they saturate when quantized),
    from the histogram (uniform within a bin)."""
    _require_histogram(observer, "clipped fraction")
    if observer.empty or (observer.low >= low and observer.high <= high):
        return 0.0
    edges, counts = observer.signed()
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    below = float(np.interp(low, edges, cumulative)) if low > observer.low else 0.0
    above = cumulative[-1] - float(np.interp(high, edges, cumulative)) if high < observer.high else 0.0
    return float((below + above) / cumulative[-1])


ValueSample = TensorObserver   # the former name
