"""Quantized IR graph -> ONNX QDQ model (opset 21): valid for ``onnx.checker``, runs in
onnxruntime, opens in Netron.

QDQ form: every quantized tensor is stored as integers and read through a
``DequantizeLinear``; every op is written with its float semantics (:mod:`.onnx_ops`) and
its quantized output produced by a ``QuantizeLinear`` with the IR value's scale / zero
point. Runtimes (onnxruntime, TensorRT, QNN) recognise ``DQ -> op -> Q`` groups and run
them on integer kernels. Mapping:

* quantized constants (int8 weights, int32 biases) -> integer initializers + DequantizeLinear
  (``axis`` for per-channel parameters); int64 biases (16x8 mode; ONNX DequantizeLinear has
  no int64 input) are written dequantized, as float;
* IR QuantizeLinear float -> int: QuantizeLinear; int -> int (requantize): DequantizeLinear
  then QuantizeLinear; IR DequantizeLinear: DequantizeLinear;
* NHWC ops: NCHW ONNX ops between Transposes (see :mod:`.onnx_ops`).

Value names are kept (the graph's inputs and outputs have the IR's names).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from ..errors import UnsupportedError
from ..ir import Graph, Node, QuantParams, Value
from .onnx_ops import WRITERS

OPSET = 21
IR_VERSION = 10


class OnnxWriter:
    """Accumulates ONNX nodes and initializers for one graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.names: set[str] = {v.name for v in graph.values()}
        self.floats: dict[tuple[str, tuple], str] = {}

    def fresh(self, base: str) -> str:
        name, index = base, 0
        while name in self.names:
            index += 1
            name = f"{base}_{index}"
        self.names.add(name)
        return name

    def initializer(self, base: str, array: npt.ArrayLike) -> str:
        name = self.fresh(base)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def emit(self, op: str, inputs: list, base: str, *, output: str | None = None, **attrs) -> str:
        output = output or self.fresh(f"{base}_out")
        self.nodes.append(helper.make_node(op, list(inputs), [output], name=self.fresh(base), **attrs))
        return output

    def emit_multi(self, op: str, inputs: list, base: str, count: int, **attrs) -> list:
        outputs = [self.fresh(f"{base}_out{i}") for i in range(count)]
        self.nodes.append(helper.make_node(op, list(inputs), outputs, name=self.fresh(base), **attrs))
        return outputs

    # -- quantization parameters --------------------------------------------------------------
    def _params(self, base: str, quant: QuantParams, dtype: np.dtype, rank: int,
                permutation: tuple | None = None) -> tuple[list, dict]:
        per_axis = quant.axis is not None and quant.scale.size > 1
        scale = quant.scale.astype(np.float32) if per_axis else np.float32(quant.scale[0])
        zero = quant.zero_point.astype(dtype) if per_axis else np.asarray(quant.zero_point[0], dtype)
        names = [self.initializer(f"{base}_scale", scale), self.initializer(f"{base}_zero_point", zero)]
        attrs = {}
        if per_axis and quant.axis is not None:   # (per_axis implies an axis)
            axis = quant.axis % rank
            attrs["axis"] = permutation.index(axis) if permutation else axis
        return names, attrs

    def dequantize(self, source: str, value: Value, output: str | None = None,
                   permutation: tuple | None = None) -> str:
        assert value.quant is not None  # callers pass quantized values only
        params, attrs = self._params(value.name, value.quant, value.dtype.numpy, value.rank, permutation)
        return self.emit("DequantizeLinear", [source] + params, f"{value.name}_dq",
                         output=output, **attrs)

    def quantize(self, source: str, value: Value, output: str) -> str:
        assert value.quant is not None  # callers pass quantized values only
        if value.quant.axis is not None and value.quant.scale.size > 1:
            raise UnsupportedError(f"tensor {value.name!r} is quantized per channel at run time; "
                                   "only constants can be")
        params, _ = self._params(value.name, value.quant, value.dtype.numpy, value.rank)
        return self.emit("QuantizeLinear", [source] + params, f"{value.name}_q", output=output)

    def float_of(self, value: Value | None, permutation: tuple | None = None) -> str:
        """The name of a float tensor holding ``value`` (dequantized when quantized)."""
        if value is None:
            return ""
        key = (value.name, permutation or ())
        if key in self.floats:
            return self.floats[key]
        if value.const is not None:
            array = value.const if permutation is None else np.ascontiguousarray(
                value.const.transpose(permutation))
            if value.quant is None or value.dtype.value == "int64":
                real = array if value.quant is None else _dequantize_array(value, array, permutation)
                name = self.initializer(value.name, real.astype(np.float32)
                                        if real.dtype.kind == "f" or value.quant else real)
            else:
                name = self.dequantize(self.initializer(value.name, array), value,
                                       permutation=permutation)
        elif value.quant is None or not value.dtype.is_integer:
            name = value.name
        else:
            name = self.dequantize(value.name, value)
        self.floats[key] = name
        return name


def _dequantize_array(value: Value, array: np.ndarray, permutation: tuple | None) -> np.ndarray:
    quant = value.quant
    assert quant is not None  # the caller checks it
    if permutation is not None and quant.axis is not None:
        quant = QuantParams(quant.scale, quant.zero_point, permutation.index(quant.axis % value.rank))
    return quant.dequantize(array)


def _write_node(writer: OnnxWriter, node: Node) -> None:
    out = node.outputs[0]
    if node.op == "DequantizeLinear":
        writer.dequantize(node.inputs[0].name, node.inputs[0], output=out.name)
        return
    if node.op == "QuantizeLinear":
        writer.quantize(writer.float_of(node.inputs[0]), out, out.name)
        return
    if node.op not in WRITERS:
        raise UnsupportedError(f"node {node.name!r}: op {node.op} has no ONNX writer; exportable "
                               f"ops: {', '.join(sorted(WRITERS))}")
    weights_index = 1 if node.op in ("Conv", "ConvTranspose") else None  # the writer permutes them
    inputs = [None if i == weights_index else writer.float_of(v) for i, v in enumerate(node.inputs)]
    results = WRITERS[node.op](writer, node, inputs)
    for value, result in zip(node.outputs, results, strict=True):
        if value.quant is not None and value.dtype.is_integer:
            writer.quantize(result, value, value.name)
        else:
            writer.emit("Identity", [result], f"{node.name}/result", output=value.name)


def _value_info(value: Value) -> onnx.ValueInfoProto:
    element = helper.np_dtype_to_tensor_dtype(value.dtype.numpy)
    return helper.make_tensor_value_info(value.name, element, list(value.shape))


def to_onnx_model(graph: Graph) -> onnx.ModelProto:
    """The ONNX QDQ model of ``graph`` (checked by ``onnx.checker``)."""
    writer = OnnxWriter(graph)
    for node in graph.nodes:
        _write_node(writer, node)
    onnx_graph = helper.make_graph(writer.nodes, graph.name, [_value_info(v) for v in graph.inputs],
                                   [_value_info(v) for v in graph.outputs], writer.initializers)
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="mcudeploy", ir_version=IR_VERSION)
    onnx.checker.check_model(model, full_check=True)
    return model


def export_onnx_qdq(graph: Graph, path: str | Path) -> Path:
    """Write ``graph`` as an ONNX QDQ model to ``path``; returns the path."""
    from ..safe_io import write_bytes  # atomic: a failed write keeps the old file

    return write_bytes(path, to_onnx_model(graph).SerializeToString(), "-o")


__all__ = ["OnnxWriter", "export_onnx_qdq", "to_onnx_model"]
