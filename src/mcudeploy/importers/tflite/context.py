"""The state shared by the op converters while one TFLite subgraph becomes an IR graph.

A converter reads its operator's inputs through :meth:`ConversionContext.input` (bound
activations, or constants decoded on first use) and emits IR nodes with
:meth:`ConversionContext.add_node` (the op's main result: output values carry the stored
tensor's name, dtype, shape and quantization) or :meth:`ConversionContext.add_helper`
(an extra node such as the Reshape before a FULLY_CONNECTED, named ``<node>/<suffix>``).

Naming: an IR node takes the name of its operator's first output tensor (TFLite ops have no
names), cut at the first ``;``: the TensorFlow converter joins the names of every op it
fused (``.../activation/Relu;.../FusedBatchNormV3;.../BiasAdd;...``), which makes node names
of 200+ characters that nobody can type after ``--cpu`` or read in a table; the first part
names the fused op's result. Node names are made unique. Values keep the full TFLite tensor
names (made unique), so tensors still match what Netron and LiteRT show; unnamed tensors
become ``tensor_<i>``.

Hybrid weights: an int8 / uint8 constant with quantization parameters read by an op whose
output is float is a *hybrid* weight (int8 weights, float activations). It is imported as
the int8 constant followed by a DequantizeLinear node, so the graph stays a float graph.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import GraphError, ModelFormatError, UnsupportedError
from ...ir import DType, Graph, Node, QuantParams, Value, get_op, infer_types
from .reader import ModelRecord, OperatorRecord, TensorRecord
from .tensors import constant_array, ir_dtype, quant_params, tensor_label

HYBRID_WEIGHT_DTYPES = (DType.INT8, DType.UINT8)


class ConversionContext:
    def __init__(self, path: Path, model: ModelRecord, graph: Graph, *, infer_shapes: bool) -> None:
        self.path = path
        self.model = model
        self.graph = graph
        self.infer_shapes = infer_shapes     # True: output shapes come from shape inference
        self.values: dict[int, Value] = {}   # tensor index -> IR value holding it
        self.hybrid_weights: list[str] = []
        self.float16_weights: list[str] = []
        self._constants: dict[tuple[int, str], Value] = {}
        self._operator: OperatorRecord | None = None
        self.node_name = ""

    # -- the current operator -----------------------------------------------------------
    @property
    def operator(self) -> OperatorRecord:
        """The operator being converted (set by :meth:`begin`)."""
        if self._operator is None:
            raise RuntimeError("ConversionContext.operator is read before begin()")
        return self._operator

    def begin(self, operator: OperatorRecord) -> None:
        self._operator = operator
        self.node_name = f"op_{operator.index}"
        count = len(self.model.tensors)
        if not operator.outputs or any(not 0 <= i < count for i in operator.outputs) \
                or any(not -1 <= i < count for i in operator.inputs):
            raise ModelFormatError(f"{self.where()}: operator {operator.index} has inputs "
                                   f"{list(operator.inputs)} and outputs {list(operator.outputs)}, "
                                   f"but the model has {count} tensors (truncated or corrupt file)")
        self.node_name = self.tensor_name(self.output_tensor(0)).split(";")[0] or \
            f"op_{operator.index}"

    @property
    def options(self) -> dict[str, Any]:
        return self.operator.options

    def where(self) -> str:
        return f"{self.path}: node {self.node_name!r} ({self.operator.op_name})"

    def unsupported(self, what: str) -> UnsupportedError:
        """An error to raise for a feature of this operator that mcudeploy does not support."""
        return UnsupportedError(f"{self.where()}: {what}")

    def tensor_name(self, tensor: TensorRecord) -> str:
        return tensor.name or f"tensor_{tensor.index}"

    def tensor(self, position: int, *, output: bool = False) -> TensorRecord | None:
        """The record of input (or output) ``position``; ``None`` when omitted (-1 or absent)."""
        indices = self.operator.outputs if output else self.operator.inputs
        if position >= len(indices) or indices[position] < 0:
            return None
        index = indices[position]
        if index >= len(self.model.tensors):
            raise ModelFormatError(f"{self.where()}: refers to tensor {index}, the model has "
                                   f"{len(self.model.tensors)} (truncated or corrupt file)")
        return self.model.tensors[index]

    def output_tensor(self, position: int) -> TensorRecord:
        """The record of output ``position``, which must exist."""
        tensor = self.tensor(position, output=True)
        if tensor is None:
            raise ModelFormatError(f"{self.where()}: output {position} is missing")
        return tensor

    def input_count(self) -> int:
        return len(self.operator.inputs)

    # -- reading inputs -------------------------------------------------------------------
    def input(self, position: int) -> Value | None:
        """The IR value of input ``position`` (``None`` if omitted)."""
        tensor = self.tensor(position)
        if tensor is None:
            return None
        if tensor.index in self.values:
            return self.values[tensor.index]
        if self.is_constant(tensor):
            return self.weights(position)
        raise ModelFormatError(f"{self.where()}: input {tensor_label(tensor)} is read before any "
                               "operator produces it (operators out of order, or a corrupt file)")

    def is_constant(self, tensor: TensorRecord) -> bool:
        """Whether the tensor has data in the file (a weight, bias, shape, ...) or was
        computed at import time (:mod:`.folding`)."""
        return self.folded(tensor) is not None or bool(self.model.buffers.get(tensor.buffer))

    def folded(self, tensor: TensorRecord) -> np.ndarray | None:
        """The array of a tensor an earlier operator's folding made constant, else ``None``."""
        value = self.values.get(tensor.index)
        return value.const if value is not None and value.is_constant else None

    def missing(self, position: int, what: str) -> ModelFormatError:
        return ModelFormatError(f"{self.where()}: the {what} input (input {position}) is missing")

    def require_input(self, position: int, what: str) -> Value:
        value = self.input(position)
        if value is None:
            raise self.missing(position, what)
        return value

    def constant(self, position: int, what: str) -> np.ndarray:
        """The constant data of input ``position``; ``UnsupportedError`` if it is computed."""
        tensor = self.tensor(position)
        if tensor is None:
            raise self.missing(position, what)
        array = self.folded(tensor)
        if array is None:
            array = constant_array(self.path, self.model, tensor)
        if array is None:
            raise self.unsupported(f"the {what} ({tensor_label(tensor)}) is computed at run time; "
                                   "mcudeploy needs it to be a constant in the model")
        return array

    def constant_ints(self, position: int, what: str) -> list[int]:
        return [int(v) for v in self.constant(position, what).reshape(-1)]

    def weights(self, position: int, transform: Callable[[np.ndarray], np.ndarray] | None = None,
                *, axis_map: dict[int, int] | None = None, tag: str = "") -> Value:
        """Input ``position`` as a constant value, optionally rearranged by ``transform``
        (``axis_map`` then moves a per-channel quantization axis); hybrid weights are
        followed by a DequantizeLinear node."""
        tensor = self.tensor(position)
        if tensor is None:
            raise self.missing(position, "weights")
        key = (tensor.index, tag)
        if key not in self._constants:
            array = self.constant(position, "weights")
            quant = quant_params(self.path, tensor)
            if transform is not None:
                array = np.ascontiguousarray(transform(array))
                if quant is not None and quant.axis is not None:
                    axes = axis_map or {}
                    if quant.axis not in axes:
                        raise self.unsupported(f"weights {tensor_label(tensor)} are quantized "
                                               f"per channel along axis {quant.axis}, which is "
                                               "not their output-channel axis")
                    quant = QuantParams(quant.scale, quant.zero_point, axes[quant.axis])
            name = self.graph.unique_name(self.tensor_name(tensor) + (f"/{tag}" if tag else ""))
            value = Value.constant(name, array, quant=quant)
            if self._is_hybrid_weight(value):
                value = self._dequantize_weight(value)
            self._constants[key] = value
        return self._constants[key]

    def _is_hybrid_weight(self, value: Value) -> bool:
        output = self.tensor(0, output=True)
        return (value.dtype in HYBRID_WEIGHT_DTYPES and value.quant is not None
                and output is not None and ir_dtype(self.path, output) == DType.FLOAT32
                and self.operator.op_name != "DEQUANTIZE")

    def _dequantize_weight(self, weight: Value) -> Value:
        self.hybrid_weights.append(weight.name)
        name = f"{weight.name}/dequantize"
        node = self.graph.add_node("DequantizeLinear", [weight], name=name, output_names=[name])
        return node.outputs[0]

    # -- emitting nodes -------------------------------------------------------------------
    def _output_value(self, position: int, shape: tuple[int, ...]) -> Value:
        """A new value for output ``position`` with the stored name, dtype and quantization
        (reserves the name: call once per output, when emitting its node)."""
        tensor = self.output_tensor(position)
        return Value(self.graph.unique_name(self.tensor_name(tensor)), ir_dtype(self.path, tensor),
                     tuple(shape), quant=quant_params(self.path, tensor),
                     layout="NHWC" if len(shape) == 4 else None)

    def output_dtype(self, position: int = 0) -> DType:
        return ir_dtype(self.path, self.output_tensor(position))

    def output_quant(self, position: int = 0) -> QuantParams | None:
        """The stored quantization of output ``position`` (for helper nodes that produce it
        before a final reshape)."""
        return quant_params(self.path, self.output_tensor(position))

    def stored_shape(self, position: int = 0) -> tuple[int, ...]:
        return tuple(self.output_tensor(position).shape)

    def add_node(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
                 *, suffix: str = "") -> Node:
        """Emit the node producing the operator's outputs (stored name, dtype, quantization;
        the stored shape, checked against shape inference)."""
        name = f"{self.node_name}/{suffix}" if suffix else self.node_name
        types = self._infer(op, inputs, attrs or {}, name)
        outputs = []
        for position, inferred in enumerate(types):
            tensor = self.tensor(position, output=True)
            if tensor is None:
                raise ModelFormatError(f"{self.where()}: output {position} is missing")
            stored = tuple(tensor.shape)
            dtype = ir_dtype(self.path, tensor)
            if (not self.infer_shapes and inferred.shape != stored) or inferred.dtype != dtype:
                raise GraphError(
                    f"{self.where()}: output {tensor_label(tensor)} is stored as "
                    f"{dtype}{list(stored)} but {op} gives {inferred.dtype}{list(inferred.shape)} (inconsistent model)")
            outputs.append(self._output_value(position, inferred.shape))
        node = self.graph.add_node(op, inputs, attrs, name=name, outputs=outputs)
        for position, value in enumerate(node.outputs):
            self.values[self.operator.outputs[position]] = value
        return node

    def add_helper(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
                   *, suffix: str, quant: QuantParams | None = None, main: bool = False) -> Value:
        """Emit an extra node whose output is ``<node>/<suffix>``; ``main`` gives the node
        itself the operator's name (it does the operator's work, e.g. the Gemm of an FC)."""
        name = f"{self.node_name}/{suffix}"
        self._infer(op, inputs, attrs or {}, name)
        node = self.graph.add_node(op, inputs, attrs, name=self.node_name if main else name,
                                   output_names=[name])
        value = node.outputs[0]
        value.quant = quant
        value.layout = "NHWC" if value.rank == 4 else None
        return value

    def bind(self, position: int, value: Value) -> None:
        """Make output ``position`` of the operator be ``value`` (no node emitted)."""
        self.values[self.operator.outputs[position]] = value

    def _infer(self, op: str, inputs: Sequence[Value | None], attrs: dict[str, Any], name: str) -> list:
        normalized = get_op(op).normalize_attrs(attrs, node_name=name)
        try:
            return infer_types(op, inputs, normalized)
        except (ValueError, IndexError, AttributeError) as err:
            raise GraphError(f"{self.where()}: cannot be converted to {op}: {err}") from None
