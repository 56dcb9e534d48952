"""Acceptance thresholds: :class:`OutputMetrics` -> PASS / FAIL checks.

Defaults follow common practice for int8 post-training quantization of classifiers:

* ``cosine >= 0.99`` on every output;
* top-1 agrees: ``top1_agreement >= 0.99`` (on fewer than 100 samples: every sample);
* ``top5_agreement >= 0.90`` (outputs with more than five classes);
* with labels, an accuracy drop of at most 2 percentage points.

A check whose metric does not apply (no class axis, no labels) is not made. Above
``MIXED_PRECISION_DROP`` (5 points) of accuracy drop the report suggests keeping the most
sensitive layers in higher precision (``mcudeploy quantize --keep-float`` / ``--int16``):
those with the largest SQNR drop in the per-layer comparison (:mod:`.layers`). The
quantizer's own sensitivity search (:mod:`mcudeploy.quantize.sensitivity`) re-quantizes the
float model from calibration ranges, which validate (given two finished models) does not have.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .metrics import OutputMetrics

MIXED_PRECISION_DROP = 5.0  # accuracy points above which mixed precision is suggested


@dataclass(frozen=True)
class Thresholds:
    cosine_min: float = 0.99
    top1_min: float = 0.99
    top5_min: float = 0.90
    accuracy_drop_max: float = 2.0   # percentage points


@dataclass(frozen=True)
class Check:
    """One threshold check of one output."""
    output: str
    metric: str
    value: float
    limit: float
    relation: str   # ">=" or "<="

    @property
    def passed(self) -> bool:
        return self.value >= self.limit if self.relation == ">=" else self.value <= self.limit

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def describe(self, samples: int) -> str:
        """The check in words for a FAIL line. A top-1 agreement also says how many of the
        ``samples`` changed class and how many the limit allows: on 32 samples, 0.9375 is two
        samples, and a 0.99 limit allows none below 100 samples (issue 27: a newcomer's FAIL
        on a few samples read like a broken quantization)."""
        text = f"{self.metric} of output {self.output!r} is {self.value:.4g}, needs {self.relation} {self.limit:g}"
        if self.metric != "top1_agreement" or samples <= 0:
            return text
        changed = round((1.0 - self.value) * samples)
        allowed = math.floor((1.0 - self.limit) * samples + 1e-9)
        if allowed:
            allows = str(allowed)
        else:
            allows = "none" if self.limit >= 1 else f"none below {math.ceil(1 / (1 - self.limit) - 1e-9)} samples"
        return text + f" ({changed} of {samples} samples change their top-1 class; the limit allows {allows})"


def checks_for(metrics: OutputMetrics, thresholds: Thresholds) -> list[Check]:
    """The checks that apply to one output, in a fixed order."""
    name = metrics.output
    checks = [Check(name, "cosine", metrics.cosine, thresholds.cosine_min, ">=")]
    if metrics.top1_agreement is not None:
        checks.append(Check(name, "top1_agreement", metrics.top1_agreement, thresholds.top1_min, ">="))
    if metrics.top5_agreement is not None:
        checks.append(Check(name, "top5_agreement", metrics.top5_agreement, thresholds.top5_min, ">="))
    if metrics.accuracy_drop is not None:
        checks.append(Check(name, "accuracy_drop", metrics.accuracy_drop,
                            thresholds.accuracy_drop_max, "<="))
    return checks


def needs_mixed_precision(metrics: list[OutputMetrics]) -> bool:
    """Whether any output lost more than ``MIXED_PRECISION_DROP`` accuracy points."""
    return any(m.accuracy_drop is not None and m.accuracy_drop > MIXED_PRECISION_DROP
               for m in metrics)


def mixed_precision_hint(sensitive_layers: list[str]) -> str:
    """The suggestion text naming the most sensitive layers."""
    names = ", ".join(sensitive_layers) if sensitive_layers else "(run with --per-layer to find them)"
    return (f"accuracy drops by more than {MIXED_PRECISION_DROP:g} points: keep the most "
            f"sensitive layers in higher precision (mcudeploy quantize --keep-float / --int16): "
            f"{names}")
