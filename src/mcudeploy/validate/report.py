"""Renderings of a :class:`~.compare.ValidationResult`: rich tables for the terminal and
JSON (stable keys; infinite or undefined figures, e.g. the SNR of identical outputs, are
written as ``null``)."""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from ..report.console import make_console
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
                  "layers": [dataclasses.asdict(layer) for layer in result.layers.layers]}
    return _clean({"float_model": result.float_model, "quantized_model": result.quantized_model,
                   "data": result.data_source, "samples": result.samples,
                   "verdict": "PASS" if result.passed else "FAIL", "outputs": metrics,
                   "checks": checks, "per_layer": layers, "hint": result.hint})


def to_json(result: ValidationResult) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"


def _format(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.5g}"
    return str(value)


def _metrics_table(result: ValidationResult) -> Table:
    table = Table(title="float vs quantized outputs")
    table.add_column("metric")
    for metric in result.metrics:
        table.add_column(metric.output[:40], justify="right")
    for column in METRIC_COLUMNS:
        values = [getattr(metric, column) for metric in result.metrics]
        if any(value is not None for value in values):
            table.add_row(column, *(_format(value) for value in values))
    return table


def _checks_table(result: ValidationResult) -> Table:
    table = Table(title="checks")
    for column in ("output", "check", "value", "limit", "verdict"):
        table.add_column(column)
    for check in result.checks:
        style = "green" if check.passed else "bold red"
        table.add_row(check.output[:40], check.metric, _format(check.value),
                      f"{check.relation} {check.limit:g}", f"[{style}]{check.verdict}[/{style}]")
    return table


def _layers_table(result: ValidationResult) -> Table:
    layers = result.layers
    table = Table(title=f"per layer (jump: SQNR drop > {layers.jump_db:g} dB)")
    for column in ("#", "node", "op", "matched by", "cosine", "max error", "SQNR dB", "drop dB"):
        table.add_column(column, justify="right" if column not in ("node", "op", "matched by") else "left")
    for index, layer in enumerate(layers.layers):
        mark = " <- first jump" if layer.node == layers.first_jump else ""
        table.add_row(str(index), layer.node[:60] + mark, layer.op, layer.matched_by,
                      f"{layer.cosine:.5f}", f"{layer.max_abs_error:.4g}",
                      _format(layer.sqnr_db), f"{layer.drop_db:.1f}")
    return table


def print_report(result: ValidationResult, console: Console | None = None) -> None:
    console = console or make_console()
    console.print(f"float model:     {result.float_model}")
    console.print(f"quantized model: {result.quantized_model}")
    console.print(f"data:            {result.samples} samples, {result.data_source}")
    console.print(_metrics_table(result))
    console.print(_checks_table(result))
    if result.layers is not None:
        console.print(_layers_table(result))
        jump = result.layers.first_jump
        console.print(f"first jump: {jump}" if jump else "first jump: none")
    if result.hint:
        console.print(f"[yellow]hint:[/yellow] {result.hint}")
    verdict = "[bold green]PASS[/bold green]" if result.passed else "[bold red]FAIL[/bold red]"
    console.print(f"validation: {verdict} ({len(result.checks) - len(result.failures)} of "
                  f"{len(result.checks)} checks passed)")
