"""Renderings of an :class:`~mcudeploy.report.analysis.Analysis`: a rich terminal report,
JSON (everything, machine-readable, stable key order) and CSV (one row per layer)."""
from __future__ import annotations

import csv
import dataclasses
import io
import json

from rich.console import Console, JustifyMethod
from rich.table import Table

from .analysis import Analysis, TensorInfo
from .console import csv_cell, make_console


def human_bytes(count: int) -> str:
    """``1536 -> '1.50 KiB'``; exact bytes below 1 KiB."""
    if count < 1024:
        return f"{count} B"
    scaled = float(count)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            return f"{scaled:.2f} {unit}"
    raise AssertionError("unreachable")


def _shape(shape: list[int]) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _quant(info: TensorInfo) -> str:
    if info.scale is None:
        return "-"
    assert info.zero_point is not None  # set together with the scale
    if info.quant_axis is None:
        return f"scale={info.scale[0]:.6g} zp={info.zero_point[0]}"
    return f"per-channel axis {info.quant_axis} ({len(info.scale)})"


def to_json(analysis: Analysis) -> str:
    return json.dumps(dataclasses.asdict(analysis), indent=2) + "\n"


CSV_COLUMNS = ["index", "name", "op", "category", "input_shapes", "output_shapes", "output_dtype",
               "params", "macc", "weight_bytes", "output_bytes", "live_bytes"]


def to_csv(analysis: Analysis) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for layer in analysis.layers:
        row = dataclasses.asdict(layer)
        row["input_shapes"] = ";".join(_shape(s) for s in layer.input_shapes)
        row["output_shapes"] = ";".join(_shape(s) for s in layer.output_shapes)
        writer.writerow([csv_cell(row[c]) for c in CSV_COLUMNS])
    return out.getvalue()


def _summary_table(analysis: Analysis) -> Table:
    table = Table(title=f"mcudeploy analyze: {analysis.model}", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("model", f"{analysis.model} ({analysis.format})"),
        ("sha256", analysis.sha256),
        ("nodes", f"{analysis.node_count} ({', '.join(f'{op} {n}' for op, n in analysis.op_counts.items())})"),
        ("MACC", f"{analysis.total_macc:,}"),
        ("parameters", f"{analysis.params:,}"),
        ("weights", f"{human_bytes(analysis.weights_bytes)} ({analysis.weights_bytes:,} B as stored)"),
        ("activations", f"{human_bytes(analysis.activation_bytes)} in all intermediate tensors"),
        ("peak live", f"{human_bytes(analysis.peak_live_bytes)} ({analysis.peak_live_bytes:,} B) at "
                      f"step {analysis.peak_step}: {', '.join(analysis.peak_tensors)}"),
        ("I/O", human_bytes(analysis.io_bytes)),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def _io_table(analysis: Analysis) -> Table:
    table = Table(title="inputs and outputs")
    for column in ("", "name", "dtype", "shape", "layout", "quantization", "bytes"):
        table.add_column(column)
    for kind, infos in (("input", analysis.inputs), ("output", analysis.outputs)):
        for info in infos:
            table.add_row(kind, info.name, info.dtype, _shape(info.shape), info.layout or "-",
                          _quant(info), f"{info.bytes:,}")
    return table


def _layer_table(analysis: Analysis) -> Table:
    table = Table(title="layers")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"), ("name", "left"), ("op", "left"), ("inputs", "left"), ("output", "left"),
        ("params", "right"), ("MACC", "right"), ("weights B", "right"), ("output B", "right"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold")
    for layer in analysis.layers:
        table.add_row(str(layer.index), layer.name, layer.op,
                      " ".join(_shape(s) for s in layer.input_shapes),
                      " ".join(_shape(s) for s in layer.output_shapes),
                      f"{layer.params:,}", f"{layer.macc:,}", f"{layer.weight_bytes:,}",
                      f"{layer.output_bytes:,}")
    return table


def print_report(analysis: Analysis, console: Console | None = None) -> None:
    """The terminal report: summary, I/O table, per-layer table."""
    console = console or make_console()
    console.print(_summary_table(analysis))
    console.print(_io_table(analysis))
    console.print(_layer_table(analysis))
