"""The validation report as rich tables for the terminal (``mcudeploy validate``): metrics,
checks, the per-layer comparison and the verdict. The JSON form is
:func:`mcudeploy.validate.report.to_json`."""
from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..validate.compare import ValidationResult
from ..validate.report import METRIC_COLUMNS
from .console import make_console, printable


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
                      f"{check.relation} {check.limit:g}", Text(check.verdict, style=style))
    return table


def _layers_table(result: ValidationResult) -> Table:
    layers = result.layers
    assert layers is not None  # the caller checks it
    table = Table(title=f"per layer (jump: SQNR drop > {layers.jump_db:g} dB)")
    for column in ("#", "node", "op", "matched by", "cosine", "max error", "SQNR dB", "drop dB"):
        table.add_column(column, justify="right" if column not in ("node", "op", "matched by") else "left")
    for index, layer in enumerate(layers.layers):
        mark = " <- first jump" if layer.node == layers.first_jump else ""
        table.add_row(str(index), layer.node[:60] + mark, layer.op, layer.matched_by,
                      f"{layer.cosine:.5f}", f"{layer.max_abs_error:.4g}",
                      _format(layer.sqnr_db), f"{layer.drop_db:.1f}")
    return table


def _not_compared(names: list[str], shown: int = 4) -> str:
    """``"; without a float tensor: a, b and 2 more"`` (empty when every layer was compared)."""
    if not names:
        return ""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return f"; without a float tensor: {', '.join(names[:shown])}{more}"


def print_report(result: ValidationResult, console: Console | None = None) -> None:
    console = console or make_console()
    console.print(f"float model:     {result.float_model}")
    console.print(f"quantized model: {result.quantized_model}")
    console.print(f"data:            {result.samples} samples, {result.data_source}")
    console.print(_metrics_table(result))
    console.print(_checks_table(result))
    if result.layers is not None:
        console.print(_layers_table(result))
        layers = result.layers
        console.print(f"{len(layers.layers)} of the {layers.deployed_layers} deployed layers compared"
                      + _not_compared(layers.not_compared), markup=False)
        jump = layers.first_jump
        console.print(f"first jump: {jump}" if jump else "first jump: none")
    if result.hint:
        console.print(f"[yellow]hint:[/yellow] {escape(printable(result.hint))}", markup=True)
    verdict = "[bold green]PASS[/bold green]" if result.passed else "[bold red]FAIL[/bold red]"
    console.print(f"validation: {verdict} ({len(result.checks) - len(result.failures)} of "
                  f"{len(result.checks)} checks passed)", markup=True)
