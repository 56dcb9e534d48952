"""Agreement metrics between a float reference tensor ``x`` and its quantized estimate ``y``
(whole arrays, or accumulated piece by piece with :class:`Agreement`):

* ``sqnr_db = 10 * log10(sum(x^2) / sum((x - y)^2))`` (infinite when equal);
* ``cosine = sum(x * y) / (|x| * |y|)`` (1 when both are zero).
"""
from __future__ import annotations

import numpy as np


def sqnr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    x = np.asarray(reference, dtype=np.float64).ravel()
    noise = float(np.sum((x - np.asarray(estimate, dtype=np.float64).ravel()) ** 2))
    signal = float(np.sum(x ** 2))
    if noise == 0.0:
        return float("inf")
    return 10.0 * np.log10(signal / noise) if signal > 0 else float("-inf")


def cosine(reference: np.ndarray, estimate: np.ndarray) -> float:
    x = np.asarray(reference, dtype=np.float64).ravel()
    y = np.asarray(estimate, dtype=np.float64).ravel()
    norms = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norms == 0.0:
        return 1.0 if not x.any() and not y.any() else 0.0
    return float(np.dot(x, y) / norms)


def concatenated(outputs: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The named outputs flattened into one vector (to score a multi-output model once)."""
    return np.concatenate([np.asarray(outputs[name], dtype=np.float64).ravel() for name in names])


class Agreement:
    """:func:`sqnr_db` and :func:`cosine` of ``x`` (reference) and ``y`` (estimate) given
    piece by piece (sample by sample): it keeps ``sum x^2``, ``sum y^2``, ``sum x y`` and
    ``sum (x - y)^2`` (float64), and the largest ``|x - y|``, never the pieces."""

    def __init__(self) -> None:
        self.reference = self.estimate = self.product = self.noise = 0.0
        self.max_abs_error = 0.0
        self.count = 0

    def add(self, reference: np.ndarray, estimate: np.ndarray) -> None:
        x = np.asarray(reference, dtype=np.float64).ravel()
        y = np.asarray(estimate, dtype=np.float64).ravel()
        difference = x - y
        self.count += x.size
        self.reference += float(np.dot(x, x))
        self.estimate += float(np.dot(y, y))
        self.product += float(np.dot(x, y))
        self.noise += float(np.dot(difference, difference))
        self.max_abs_error = max(self.max_abs_error, float(np.max(np.abs(difference), initial=0.0)))

    @property
    def sqnr_db(self) -> float:
        if self.noise == 0.0:
            return float("inf")
        return 10.0 * float(np.log10(self.reference / self.noise)) if self.reference > 0 else float("-inf")

    @property
    def cosine(self) -> float:
        norms = float(np.sqrt(self.reference) * np.sqrt(self.estimate))
        if norms == 0.0:
            return 1.0 if self.reference == 0.0 and self.estimate == 0.0 else 0.0
        return self.product / norms
