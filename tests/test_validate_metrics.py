"""Validation metrics and threshold checks against hand-computed values."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mcudeploy.validate.metrics import (
    class_count,
    compare_output,
    l2_relative,
    mae,
    max_abs_error,
    rmse,
    top1_agreement,
    top5_agreement,
)
from mcudeploy.validate.thresholds import Thresholds, checks_for, mixed_precision_hint, needs_mixed_precision

# Two samples of three classes. Differences r - q: [0, 0, -1], [1, 0, 0] -> squared sum 2,
# absolute sum 2 over 6 elements; sum r^2 = 1 + 4 + 9 + 16 = 30; r.q = 1 + 4 + 12 + 12 = 29;
# |q|^2 = 1 + 4 + 16 + 9 = 30.
REFERENCE = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
ESTIMATE = np.array([[1.0, 2.0, 4.0], [3.0, 0.0, 0.0]])


def test_error_metrics_match_hand_values():
    metrics = compare_output("y", REFERENCE, ESTIMATE)
    assert metrics.samples == 2
    assert metrics.rmse == pytest.approx(math.sqrt(2 / 6))
    assert metrics.mae == pytest.approx(2 / 6)
    assert metrics.l2_relative == pytest.approx(math.sqrt(2) / math.sqrt(30))
    assert metrics.snr_db == pytest.approx(10 * math.log10(30 / 2))
    assert metrics.cosine == pytest.approx(29 / 30)
    assert metrics.max_abs_error == 1.0


def test_class_metrics_and_accuracy():
    # Sample 0: float says class 2, quantized class 2; sample 1: both class 0.
    metrics = compare_output("y", REFERENCE, ESTIMATE, labels=np.array([2, 1]))
    assert metrics.top1_agreement == 1.0
    assert metrics.top5_agreement is None            # only 3 classes
    assert metrics.float_accuracy == 0.5 and metrics.quantized_accuracy == 0.5
    assert metrics.accuracy_drop == 0.0
    flipped = compare_output("y", REFERENCE, np.array([[1.0, 5.0, 4.0], [3.0, 0.0, 0.0]]),
                             labels=np.array([2, 0]))
    assert flipped.top1_agreement == 0.5
    assert flipped.float_accuracy == 1.0 and flipped.quantized_accuracy == 0.5
    assert flipped.accuracy_drop == pytest.approx(50.0)


def test_top5_counts_the_float_answer_in_the_quantized_five_best():
    reference = np.array([[9.0, 1, 1, 1, 1, 1, 1, 0], [0.0, 0, 0, 0, 0, 0, 0, 9]])
    # Row 0: class 0 ranks 5th in the estimate (in); row 1: class 7 ranks 8th (out).
    estimate = np.array([[5.0, 9, 8, 7, 6, 1, 1, 1], [9.0, 8, 7, 6, 5, 4, 3, 2]])
    assert top5_agreement(reference, estimate) == 0.5
    assert top1_agreement(reference, estimate) == 0.0


def test_exact_and_degenerate_cases():
    metrics = compare_output("y", REFERENCE, REFERENCE.copy())
    assert metrics.snr_db == math.inf and metrics.cosine == pytest.approx(1.0)
    assert metrics.rmse == metrics.mae == metrics.max_abs_error == metrics.l2_relative == 0.0
    zeros = np.zeros((1, 4))
    assert l2_relative(zeros, zeros) == 0.0 and l2_relative(zeros, zeros + 1) == math.inf
    assert rmse(zeros, zeros + 2) == 2.0 and mae(zeros, zeros - 3) == 3.0
    assert max_abs_error(zeros, zeros) == 0.0


@pytest.mark.parametrize("shape, classes", [((1, 10), 10), ((10,), 10), ((1, 1, 1, 2), 2),
                                             ((1, 640), 640), ((1, 8, 8, 3), None), ((1, 1), None)])
def test_class_count(shape, classes):
    assert class_count(shape) == classes


def test_non_class_output_has_no_top_k():
    metrics = compare_output("map", np.ones((2, 1, 4, 4, 3)), np.ones((2, 1, 4, 4, 3)))
    assert metrics.top1_agreement is None and metrics.top5_agreement is None


def test_checks_pass_and_fail_at_the_limits():
    metrics = compare_output("y", REFERENCE, ESTIMATE, labels=np.array([2, 0]))
    checks = {c.metric: c for c in checks_for(metrics, Thresholds())}
    assert set(checks) == {"cosine", "top1_agreement", "accuracy_drop"}
    assert checks["cosine"].verdict == "FAIL"          # 0.967 < 0.99
    assert checks["top1_agreement"].verdict == "PASS"
    assert checks["accuracy_drop"].verdict == "PASS"   # 0 points
    lenient = {c.metric: c for c in checks_for(metrics, Thresholds(cosine_min=29 / 30 - 1e-12))}
    assert lenient["cosine"].passed                    # a limit at the value passes


def test_mixed_precision_hint_above_five_points():
    dropped = compare_output("y", REFERENCE, np.array([[1.0, 5.0, 4.0], [3.0, 0.0, 0.0]]),
                             labels=np.array([2, 0]))
    assert needs_mixed_precision([dropped])            # 50 points
    assert not needs_mixed_precision([compare_output("y", REFERENCE, ESTIMATE, np.array([2, 0]))])
    assert "conv_7, fc" in mixed_precision_hint(["conv_7", "fc"])
