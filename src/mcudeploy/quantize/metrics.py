"""Agreement metrics between a float reference tensor ``x`` and its quantized estimate ``y``:

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
