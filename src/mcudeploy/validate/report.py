"""A :class:`~.compare.ValidationResult` as a plain dict and JSON (stable keys; infinite or undefined figures, e.g. the SNR of identical outputs, are
written as ``null``). The terminal tables are :mod:`mcudeploy.report.validation_render`."""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from .compare import ValidationResult

METRIC_COLUMNS = ("rmse", "mae", "l2_relative", "snr_db", "cosine", "max_abs_error",
                  "top1_agreement", "top5_agreement", "float_accuracy", "quantized_accuracy",
                  "accuracy_drop")


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _clean(data: Any) -> Any:
    if isinstance(data, dict):
        return {key: _clean(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_clean(value) for value in data]
    return _number(data)


def to_dict(result: ValidationResult) -> dict[str, Any]:
    """Everything but the raw outputs, as plain JSON-able data."""
    metrics = [dict(dataclasses.asdict(m), accuracy_drop=m.accuracy_drop) for m in result.metrics]
    checks = [dict(dataclasses.asdict(c), verdict=c.verdict) for c in result.checks]
    layers = None
    if result.layers is not None:
        layers = {"jump_db": result.layers.jump_db, "first_jump": result.layers.first_jump,
                  "layers": [dataclasses.asdict(layer) for layer in result.layers.layers],
                  "deployed_layers": result.layers.deployed_layers,
                  "not_compared": result.layers.not_compared}
    return _clean({"float_model": result.float_model, "quantized_model": result.quantized_model,
                   "data": result.data_source, "samples": result.samples,
                   "verdict": "PASS" if result.passed else "FAIL", "outputs": metrics,
                   "checks": checks, "per_layer": layers, "hint": result.hint})


def to_json(result: ValidationResult) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"
