"""The state one ONNX import shares between converters.

ONNX tensors are tracked by name in two maps: ``constants`` (numpy arrays: initializers,
Constant nodes and everything folded at import time, in any numpy dtype) and ``values``
(IR values). A constant becomes an IR constant only when an IR node reads it
(:meth:`ConversionContext.value`), so helper tensors of dtypes the IR lacks (float64,
strings, ...) never reach the IR. Converters read inputs and attributes through this
class and add IR nodes with :meth:`ConversionContext.emit`, which names the outputs after
the ONNX tensors.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from ...errors import GraphError, UnsupportedError
from ...ir import Graph, Node, Value, get_op


class ConversionContext:
    def __init__(self, path: Path, graph: Graph, opset: int, consumed: set[str]) -> None:
        self.path = path
        self.graph = graph
        self.opset = opset
        self.consumed = consumed          # tensor names read by a node or a graph output
        self.values: dict[str, Value] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.inferred_shapes: dict[str, tuple[int, ...]] = {}   # ONNX shape inference's static shapes

    # -- errors -----------------------------------------------------------------------
    def unsupported(self, node: onnx.NodeProto, message: str) -> UnsupportedError:
        return UnsupportedError(f"{self.path}: node {node.name!r} ({node.op_type}): {message}")

    def invalid(self, node: onnx.NodeProto, message: str) -> GraphError:
        """The model itself is inconsistent at ``node`` (not a limitation of mcudeploy)."""
        return GraphError(f"{self.path}: node {node.name!r} ({node.op_type}): {message}")

    # -- reading tensors --------------------------------------------------------------
    def is_known(self, name: str) -> bool:
        return name in self.constants or name in self.values

    def shape_of(self, name: str) -> tuple[int, ...]:
        """Static shape of tensor ``name`` (constant or IR value) without materialising it."""
        array = self.constants.get(name)
        return tuple(array.shape) if array is not None else self.values[name].shape

    def constant(self, name: str) -> np.ndarray | None:
        """The array of constant tensor ``name``, or ``None`` when it is not a constant."""
        return self.constants.get(name)

    def value(self, name: str) -> Value:
        """The IR value of tensor ``name``; constants become IR constants on first use."""
        if name not in self.values:
            array = self.constants[name]
            try:
                self.values[name] = self.graph.add_constant(name, array)
            except ValueError as err:
                raise UnsupportedError(f"{self.path}: constant {name!r} ({array.dtype}"
                                       f"{list(array.shape)}) is used by a computing op but "
                                       f"its dtype is not supported: {err}") from None
        return self.values[name]

    def input(self, node: onnx.NodeProto, index: int) -> Value | None:
        """IR value of input ``index``; ``None`` when it is omitted (absent or ``""``)."""
        if index >= len(node.input) or not node.input[index]:
            return None
        return self.value(node.input[index])

    def required_input(self, node: onnx.NodeProto, index: int) -> Value:
        """IR value of input ``index``, which the op requires: refused when it is omitted."""
        value = self.input(node, index)
        if value is None:
            raise self.invalid(node, f"its required input {index} is omitted")
        return value

    def constant_input(self, node: onnx.NodeProto, index: int, what: str) -> np.ndarray | None:
        """The constant array of input ``index`` (``None`` when omitted); a non-constant
        input is refused, since the IR needs it as a static attribute."""
        if index >= len(node.input) or not node.input[index]:
            return None
        array = self.constant(node.input[index])
        if array is None:
            raise self.unsupported(node, f"its {what} input {node.input[index]!r} is computed "
                                   "at run time; mcudeploy needs it to be a constant")
        return array

    def required_constant_input(self, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
        """:meth:`constant_input` of an input the op requires: refused when it is omitted."""
        array = self.constant_input(node, index, what)
        if array is None:
            raise self.invalid(node, f"its required {what} input (input {index}) is omitted")
        return array

    def output_used(self, node: onnx.NodeProto, index: int) -> bool:
        return index < len(node.output) and node.output[index] in self.consumed

    # -- attributes -------------------------------------------------------------------
    @staticmethod
    def attributes(node: onnx.NodeProto) -> dict[str, Any]:
        """Node attributes as Python values (strings decoded, tensors as numpy arrays)."""
        result: dict[str, Any] = {}
        for attribute in node.attribute:
            value = onnx.helper.get_attribute_value(attribute)
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            elif isinstance(value, onnx.TensorProto):
                value = numpy_helper.to_array(value)
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode("utf-8", errors="replace") for v in value]
            result[attribute.name] = value
        return result

    # -- writing the IR ---------------------------------------------------------------
    def emit(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None,
             node: onnx.NodeProto, *, name: str | None = None,
             outputs: Iterable[str] | None = None) -> Node:
        """Add IR node ``op`` for ONNX ``node``. It is named ``name`` (default: the ONNX node
        name) and its outputs ``outputs`` (default: the ONNX node's outputs); every output is
        recorded as the IR value of that tensor name."""
        output_names = list(outputs) if outputs is not None else [n for n in node.output if n]
        count = len(output_names) if get_op(op).outputs is None else None
        ir_node = self.graph.add_node(op, inputs, attrs, name=name or node.name,
                                      outputs=count, output_names=output_names)
        for tensor_name, value in zip(output_names, ir_node.outputs):
            self.values[tensor_name] = value
        return ir_node

    def helper_name(self, node: onnx.NodeProto, suffix: str) -> str:
        """Name for an extra IR node / value made while converting ``node``."""
        return f"{node.name}/{suffix}"
