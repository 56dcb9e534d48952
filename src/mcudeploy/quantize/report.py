"""The quantization report: per tensor (dtype, scale, zero point, observed range, chosen
range, clipped fraction) and per layer (precision, SQNR and cosine of its output against
the float model), plus the model-output figures. JSON (``to_json``) or a rich table.

The clipped fraction is the share of calibration values outside the range the tensor's
parameters can represent, ``[scale * (qmin - zp), scale * (qmax - zp)]``: they saturate.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..ir import Graph, Value
from .metrics import cosine, sqnr_db
from .observers import ValueSample, clipped_fraction


@dataclass
class TensorRecord:
    name: str
    dtype: str
    scale: float
    zero_point: int
    observed_min: float
    observed_max: float
    clipped_fraction: float


@dataclass
class LayerRecord:
    node: str
    op: str
    precision: str
    sqnr_db: float
    cosine: float


@dataclass
class QuantizationReport:
    model: str
    observer: str
    samples: int
    output_sqnr_db: float
    output_cosine: float
    float_nodes: list[str] = field(default_factory=list)
    int16_nodes: list[str] = field(default_factory=list)
    tensors: list[TensorRecord] = field(default_factory=list)
    layers: list[LayerRecord] = field(default_factory=list)


def representable_range(value: Value) -> tuple[float, float]:
    info = np.iinfo(value.dtype.numpy)
    scale, zero_point = float(value.quant.scale[0]), int(value.quant.zero_point[0])
    return scale * (int(info.min) - zero_point), scale * (int(info.max) - zero_point)


def tensor_records(quantized: Graph, observed: dict[str, ValueSample]) -> list[TensorRecord]:
    """One record per quantized activation that has calibration observations."""
    records = []
    for value in quantized.values():
        if value.const is not None or value.quant is None or value.quant.axis is not None:
            continue
        sample = observed.get(value.name) or observed.get(value.name.rsplit("_int", 1)[0])
        if sample is None:
            continue
        low, high = representable_range(value)
        records.append(TensorRecord(value.name, value.dtype.value, float(value.quant.scale[0]),
                                    int(value.quant.zero_point[0]), sample.low, sample.high,
                                    clipped_fraction(sample, low, high)))
    return records


def _as_real(value: Value, array: np.ndarray) -> np.ndarray:
    if value.quant is not None and value.dtype.is_integer:
        return value.quant.dequantize(array)
    return array


def layer_records(source: Graph, quantized: Graph, float_capture: dict[str, np.ndarray],
                  quantized_capture: dict[str, np.ndarray]) -> list[LayerRecord]:
    """SQNR / cosine of every source node's output as the quantized graph computes it."""
    values = {v.name: v for v in quantized.values()}
    nodes = {n.name: n for n in quantized.nodes}
    records = []
    for node in source.nodes:
        name = node.outputs[0].name
        candidates = [name, f"{name}_int8", f"{name}_int16"]
        found = next((c for c in candidates if c in quantized_capture and c in values), None)
        if found is None or name not in float_capture:
            continue
        estimate = _as_real(values[found], quantized_capture[found])
        new = nodes.get(node.name)
        precision = (new.outputs[0].dtype.value if new is not None else "float32")
        records.append(LayerRecord(node.name, node.op, precision,
                                   sqnr_db(float_capture[name], estimate),
                                   cosine(float_capture[name], estimate)))
    return records


def _finite(number: float) -> float | str:
    return number if math.isfinite(number) else str(number)


def to_json(report: QuantizationReport) -> str:
    data = asdict(report)
    for section in ("layers",):
        for row in data[section]:
            row["sqnr_db"] = _finite(row["sqnr_db"])
    data["output_sqnr_db"] = _finite(data["output_sqnr_db"])
    return json.dumps(data, indent=2) + "\n"


def print_report(report: QuantizationReport, console=None, *, worst: int = 15) -> None:
    """A summary, the ``worst`` layers by SQNR, and the most clipped tensors, as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    console.print(f"[bold]{report.model}[/]: observer {report.observer}, {report.samples} "
                  f"calibration samples; output SQNR {report.output_sqnr_db:.1f} dB, "
                  f"cosine {report.output_cosine:.5f}")
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
    for row in sorted(report.tensors, key=lambda r: -r.clipped_fraction)[:worst]:
        tensors.add_row(row.name, row.dtype, f"{row.scale:.4g}", str(row.zero_point),
                        f"{row.observed_min:.4g}", f"{row.observed_max:.4g}",
                        f"{100 * row.clipped_fraction:.3f}%")
    console.print(tensors)
