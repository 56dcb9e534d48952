"""The quantization report: per tensor (dtype, scale, zero point, observed range, chosen
range, clipped fraction) and per layer (precision, SQNR and cosine of its output against
the float model), plus the model-output figures, and its JSON (``to_json``); the terminal
tables are :mod:`mcudeploy.report.quantize_render`.

The figures are accumulated over the evaluation samples one sample at a time
(:class:`ReportEvaluation`). The clipped fraction is the share of the evaluation samples'
float values of a tensor (every one of them) outside the range the tensor's parameters can
represent, ``[scale * (qmin - zp), scale * (qmax - zp)]``: they saturate. (Before streaming it
was the share of a random sample of the calibration values.)
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..ir import Graph, Node, Value
from .metrics import Agreement
from .observers import TensorObserver


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
    evaluation_samples: int = 0         # the samples the figures were measured on


def representable_range(value: Value) -> tuple[float, float]:
    assert value.quant is not None  # a quantized activation (see ReportEvaluation.tensors)
    info = np.iinfo(value.dtype.numpy)
    scale, zero_point = float(value.quant.scale[0]), int(value.quant.zero_point[0])
    return scale * (int(info.min) - zero_point), scale * (int(info.max) - zero_point)


def _as_real(value: Value, array: np.ndarray) -> np.ndarray:
    if value.quant is not None and value.dtype.is_integer:
        return value.quant.dequantize(array)
    return array


def _source_name(value: Value, float_names: set[str]) -> str | None:
    """The float tensor a quantized tensor stands for (same name, or without ``_int8`` ...)."""
    for name in (value.name, value.name.rsplit("_int", 1)[0]):
        if name in float_names:
            return name
    return None


class ReportEvaluation:
    """The report's figures accumulated over evaluation samples, one sample at a time
    (:meth:`add` takes one sample's float and quantized captures, keeps only sums): the
    model outputs' SQNR / cosine, every source node's output as the quantized graph computes
    it, and the share of every quantized tensor's float values outside its representable
    range (its clipped fraction)."""

    def __init__(self, source: Graph, quantized: Graph) -> None:
        values = {v.name: v for v in quantized.values()}
        nodes = {n.name: n for n in quantized.nodes}
        float_names = {v.name for v in source.values() if v.const is None}
        self.output_names = [v.name for v in source.outputs]
        self.output_values = {v.name: values[v.name] for v in quantized.outputs if v.name in values}
        self.outputs = Agreement()
        self.layers: list[tuple[Node, str, Value, str, Agreement]] = []
        for node in source.nodes:
            name = node.outputs[0].name
            found = next((values[c] for c in (name, f"{name}_int8", f"{name}_int16") if c in values), None)
            if found is not None:
                new = nodes.get(node.name)
                precision = new.outputs[0].dtype.value if new is not None else "float32"
                self.layers.append((node, name, found, precision, Agreement()))
        self.tensors: list[tuple[Value, str, list[int]]] = []
        for value in quantized.values():
            if value.const is None and value.quant is not None and value.quant.axis is None:
                source_name = _source_name(value, float_names)
                if source_name is not None:
                    self.tensors.append((value, source_name, [0, 0]))

    def add(self, float_capture: dict[str, np.ndarray], quantized_capture: dict[str, np.ndarray]) -> None:
        for name in self.output_names:
            value = self.output_values.get(name)   # an integer output (int8 I/O): its real values
            array = quantized_capture[name]
            self.outputs.add(float_capture[name], array if value is None else _as_real(value, array))
        for _, name, value, _, agreement in self.layers:
            if name in float_capture and value.name in quantized_capture:
                agreement.add(float_capture[name], _as_real(value, quantized_capture[value.name]))
        for value, name, clipped in self.tensors:
            if name in float_capture:
                low, high = representable_range(value)
                array = float_capture[name]
                clipped[0] += int(np.count_nonzero((array < low) | (array > high)))
                clipped[1] += array.size

    def layer_records(self) -> list[LayerRecord]:
        """SQNR / cosine of every source node's output as the quantized graph computes it."""
        return [LayerRecord(node.name, node.op, precision, agreement.sqnr_db, agreement.cosine)
                for node, _, _, precision, agreement in self.layers if agreement.count]

    def tensor_records(self, observed: dict[str, TensorObserver]) -> list[TensorRecord]:
        """One record per quantized activation that has calibration observations."""
        records = []
        for value, name, (outside, total) in self.tensors:
            observer = observed.get(name)
            if observer is None or total == 0:
                continue
            assert value.quant is not None  # a quantized activation (see ReportEvaluation.tensors)
            records.append(TensorRecord(value.name, value.dtype.value, float(value.quant.scale[0]),
                                        int(value.quant.zero_point[0]), observer.low, observer.high,
                                        outside / total))
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
