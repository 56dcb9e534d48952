"""The quantization report as rich tables for the terminal (``mcudeploy quantize``): the
summary, the least accurate layers by SQNR and the most clipped tensors. The record and its
JSON form are :mod:`mcudeploy.quantize.report`."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from ..quantize.report import QuantizationReport
from .console import make_console


def print_report(report: QuantizationReport, console=None, *, worst: int = 15) -> None:
    """A summary, the ``worst`` layers by SQNR, and the most clipped tensors, as rich tables."""
    console = console or make_console()
    console.print(f"[bold]{escape(report.model)}[/]: observer {report.observer}, {report.samples} "
                  f"calibration samples; output SQNR {report.output_sqnr_db:.1f} dB, "
                  f"cosine {report.output_cosine:.5f}", markup=True)
    if report.float_nodes or report.int16_nodes:
        console.print(f"float nodes: {', '.join(report.float_nodes) or '-'}; "
                      f"int16 nodes: {', '.join(report.int16_nodes) or '-'}")
    layers = Table(title=f"least accurate layers (of {len(report.layers)})")
    for column in ("node", "op", "precision", "SQNR dB", "cosine"):
        layers.add_column(column, justify="right" if column in ("SQNR dB", "cosine") else "left")
    for row in sorted(report.layers, key=lambda r: r.sqnr_db)[:worst]:
        layers.add_row(row.node, row.op, row.precision, f"{row.sqnr_db:.1f}", f"{row.cosine:.5f}")
    console.print(layers)
    tensors = Table(title=f"most clipped tensors (of {len(report.tensors)})")
    for column in ("tensor", "dtype", "scale", "zp", "observed min", "observed max", "clipped"):
        tensors.add_column(column, justify="left" if column == "tensor" else "right")
    for tensor in sorted(report.tensors, key=lambda r: -r.clipped_fraction)[:worst]:
        tensors.add_row(tensor.name, tensor.dtype, f"{tensor.scale:.4g}", str(tensor.zero_point),
                        f"{tensor.observed_min:.4g}", f"{tensor.observed_max:.4g}",
                        f"{100 * tensor.clipped_fraction:.3f}%")
    console.print(tensors)
