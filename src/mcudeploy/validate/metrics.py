"""Agreement metrics between a float reference output ``r`` and the quantized model's output
``q`` (already dequantized: ``q = scale * (q_int - zero_point)``), over ``N`` samples.

Arrays carry a leading sample axis, ``(N, *output_shape)``; ``n`` below is the total number
of elements, ``r_i`` / ``q_i`` one sample flattened:

* ``rmse = sqrt(sum((r - q)^2) / n)``, ``mae = sum(|r - q|) / n``;
* ``l2_relative = ||r - q||_2 / ||r||_2`` (over all samples; infinite when ``r`` is all zero
  and ``q`` is not, 0 when both are);
* ``snr_db = 10 * log10(sum(r^2) / sum((r - q)^2))`` (infinite when ``q == r``);
* ``cosine = sum(r * q) / (||r|| * ||q||)`` over all samples flattened, as ``stedgeai
  validate`` reports it (1 when both are zero, 0 when only one is);
* ``max_abs_error = max |r - q|``;
* top-k agreement, for class-score outputs only (one axis of ``C >= 2`` classes per sample,
  any other axes of size 1): ``top1 = mean_i [argmax r_i == argmax q_i]`` and
  ``top5 = mean_i [argmax r_i in top5(q_i)]`` (only when ``C > 5``): the float model's answer
  is among the quantized model's five best. Ties go to the lower class index, as ``argmax``
  does (a quantized softmax has many exact ties at 0, which is why top-5 does not compare
  whole top-5 sets);
* with integer ``labels[N]``: ``accuracy = mean_i [argmax x_i == labels_i]`` for ``x = r`` and
  ``x = q``, and ``accuracy_drop = 100 * (accuracy_r - accuracy_q)`` in percentage points.

A metric that does not apply is ``None``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..quantize.metrics import cosine, sqnr_db


@dataclass(frozen=True)
class OutputMetrics:
    """The metrics of one model output (``None``: does not apply to this output)."""
    output: str
    samples: int
    rmse: float
    mae: float
    l2_relative: float
    snr_db: float
    cosine: float
    max_abs_error: float
    top1_agreement: float | None = None
    top5_agreement: float | None = None
    float_accuracy: float | None = None
    quantized_accuracy: float | None = None

    @property
    def accuracy_drop(self) -> float | None:
        """Accuracy lost by quantization, in percentage points."""
        if self.float_accuracy is None or self.quantized_accuracy is None:
            return None
        return 100.0 * (self.float_accuracy - self.quantized_accuracy)


def _float64(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float64)


def rmse(reference: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.sqrt(np.mean((_float64(reference) - _float64(estimate)) ** 2)))


def mae(reference: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.mean(np.abs(_float64(reference) - _float64(estimate))))


def l2_relative(reference: np.ndarray, estimate: np.ndarray) -> float:
    error = float(np.linalg.norm((_float64(reference) - _float64(estimate)).ravel()))
    norm = float(np.linalg.norm(_float64(reference).ravel()))
    if norm == 0.0:
        return 0.0 if error == 0.0 else math.inf
    return error / norm


def max_abs_error(reference: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.max(np.abs(_float64(reference) - _float64(estimate)), initial=0.0))


def class_count(shape: tuple[int, ...]) -> int | None:
    """``C`` when one sample of ``shape`` is a class-score vector (one axis ``C >= 2``, the
    others 1), else ``None``."""
    per_sample = [d for d in shape if d != 1]
    return per_sample[0] if len(per_sample) == 1 and per_sample[0] >= 2 else None


def class_scores(array: np.ndarray) -> np.ndarray | None:
    """``(N, C)`` view of an ``(N, ...)`` output holding one class-score axis of ``C >= 2``
    (other axes of size 1), else ``None``."""
    classes = class_count(array.shape[1:])
    return None if classes is None else array.reshape(array.shape[0], classes)


def top1_agreement(reference: np.ndarray, estimate: np.ndarray) -> float:
    """Share of samples (rows of ``(N, C)`` scores) whose best class agrees."""
    return float(np.mean(np.argmax(reference, axis=1) == np.argmax(estimate, axis=1)))


def top5_agreement(reference: np.ndarray, estimate: np.ndarray) -> float:
    """Share of rows whose reference best class is among the estimate's five best."""
    best = np.argmax(reference, axis=1)
    top5 = np.argsort(-estimate, axis=1, kind="stable")[:, :5]
    return float(np.mean((top5 == best[:, None]).any(axis=1)))


def accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    """Share of rows of ``(N, C)`` scores whose best class equals the label."""
    return float(np.mean(np.argmax(scores, axis=1) == np.asarray(labels)))


def compare_output(name: str, reference: np.ndarray, estimate: np.ndarray,
                   labels: np.ndarray | None = None, *, scores: bool = True) -> OutputMetrics:
    """Every metric of one output; ``reference`` / ``estimate`` are ``(N, *shape)`` floats.
    ``scores=False``: the output is not class scores whatever its shape (no top-k)."""
    reference, estimate = _float64(reference), _float64(estimate)
    if reference.shape != estimate.shape:
        raise ValueError(f"output {name!r}: reference {reference.shape} vs estimate {estimate.shape}")
    scores_reference = class_scores(reference) if scores else None
    scores_estimate = class_scores(estimate) if scores else None
    classes = None if scores_reference is None else scores_reference.shape[1]
    top1 = top5 = float_accuracy = quantized_accuracy = None
    if classes is not None:
        assert scores_reference is not None and scores_estimate is not None  # same shapes: both are scores
        top1 = top1_agreement(scores_reference, scores_estimate)
        top5 = top5_agreement(scores_reference, scores_estimate) if classes > 5 else None
        if labels is not None:
            float_accuracy = accuracy(scores_reference, labels)
            quantized_accuracy = accuracy(scores_estimate, labels)
    return OutputMetrics(
        output=name, samples=reference.shape[0], rmse=rmse(reference, estimate),
        mae=mae(reference, estimate), l2_relative=l2_relative(reference, estimate),
        snr_db=sqnr_db(reference, estimate), cosine=cosine(reference, estimate),
        max_abs_error=max_abs_error(reference, estimate), top1_agreement=top1,
        top5_agreement=top5, float_accuracy=float_accuracy, quantized_accuracy=quantized_accuracy)
