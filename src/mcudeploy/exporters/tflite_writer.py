"""Quantized IR graph (NHWC, full integer: the form :func:`mcudeploy.quantize.quantize_model`
gives and the TFLite importer reads) -> a full-integer TFLite flatbuffer that TensorFlow Lite
Micro runs with the integer reference's results, bit for bit.

    export_tflite(graph, path)      to_tflite(graph) -> bytes

Every value becomes a tensor of its name, dtype, shape and quantization (scale, zero point,
``quantized_dimension`` for per-channel weights: 0, or 3 for depthwise weights); every
constant gets its own buffer. Each IR op maps to the TFLite builtin the importer reads back
into the same IR op (:data:`WRITERS`, one function per op family):

* Conv -> CONV_2D (weights ``[O, kH, kW, C]`` as stored), or DEPTHWISE_CONV_2D when
  ``group == C`` and the weights have one input channel (``[C*M, kH, kW, 1] -> [1, kH, kW,
  C*M]``, per-channel axis 0 -> 3); explicit pads become SAME or VALID when they equal what
  TFLite computes for them, else a PAD (with the input's zero point, real 0) then VALID;
* Gemm (``transB = 1``, ``alpha = beta = 1``) -> FULLY_CONNECTED; Add / Sub / Mul -> ADD /
  SUB / MUL; a fused clamp ``[0, inf)``, ``[0, 6]``, ``[-1, 1]`` -> RELU, RELU6, RELU_N1_TO_1;
* MaxPool / AveragePool -> MAX_POOL_2D / AVERAGE_POOL_2D (pads must be SAME or VALID),
  ReduceMean -> MEAN, Softmax -> SOFTMAX, Sigmoid -> LOGISTIC, Tanh, HardSwish, LeakyRelu;
* Reshape / Flatten / Squeeze / Unsqueeze / Identity / Dropout -> RESHAPE, Transpose,
  Concat -> CONCATENATION, Pad -> PAD, Slice -> STRIDED_SLICE, Resize -> RESIZE_NEAREST_NEIGHBOR
  / RESIZE_BILINEAR (``align_corners`` / ``half_pixel_centers`` from the coordinate mode),
  DepthToSpace (DCR) -> DEPTH_TO_SPACE;
* QuantizeLinear -> QUANTIZE (float -> int only with TFLite's rounding, halves away from
  zero: the quantizer's ``tflite_rounding``), DequantizeLinear -> DEQUANTIZE.

Anything else, a float compute node (a mixed-precision graph) or an attribute TFLite cannot
express raises :class:`~mcudeploy.errors.UnsupportedError` naming the node and what to do.
Built with :mod:`.tflite_flatbuffer` (the ``tflite`` schema package's builder functions).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import numpy.typing as npt
from tflite.ActivationFunctionType import ActivationFunctionType
from tflite.Padding import Padding
from tflite.utils import BUILTIN_OPCODE2NAME

from ..errors import UnsupportedError
from ..ir import Graph, Node, Value, precision
from .tflite_flatbuffer import TENSOR_TYPES, FlatModel, FlatOpcode, FlatOperator, FlatTensor, build_flatbuffer

OPCODES = {name: code for code, name in BUILTIN_OPCODE2NAME.items()}
VERSIONS = {"CONV_2D": 3, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 4, "ADD": 2, "SUB": 2, "MUL": 2,
            "MAX_POOL_2D": 2, "AVERAGE_POOL_2D": 2, "MEAN": 2, "SOFTMAX": 2, "LOGISTIC": 2, "TANH": 2,
            "CONCATENATION": 2, "PAD": 2, "TRANSPOSE": 2, "STRIDED_SLICE": 2, "QUANTIZE": 2,
            "DEQUANTIZE": 2, "RESIZE_NEAREST_NEIGHBOR": 2, "RESIZE_BILINEAR": 2, "LEAKY_RELU": 2,
            "DEPTH_TO_SPACE": 2}
ACTIVATIONS = {(None, None): ActivationFunctionType.NONE, (0.0, None): ActivationFunctionType.RELU,
               (0.0, 6.0): ActivationFunctionType.RELU6, (-1.0, 1.0): ActivationFunctionType.RELU_N1_TO_1}
RESIZE_FLAGS = {"asymmetric": (False, False), "align_corners": (True, False),
                "half_pixel": (False, True), "tf_half_pixel_for_nn": (False, True)}
Writer = Callable[["TfliteBuilder", Node], None]
WRITERS: dict[str, Writer] = {}


def writer(*ops: str) -> Callable[[Writer], Writer]:
    """Register the decorated function as the writer of IR ``ops``."""
    def register(function: Writer) -> Writer:
        for op in ops:
            WRITERS[op] = function
        return function
    return register


def _where(node: Node) -> str:
    return f"node {node.name!r} ({node.op})"


class TfliteBuilder:
    """Accumulates the tensors, buffers, operator codes and operators of one subgraph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.model = FlatModel([], [], [], [], [], description=f"mcudeploy: {graph.name}", subgraph_name=graph.name)
        self.indices: dict[str, int] = {}
        self.names: set[str] = {v.name for v in graph.values()}

    def fresh(self, base: str) -> str:
        name, count = base, 0
        while name in self.names:
            count += 1
            name = f"{base}_{count}"
        self.names.add(name)
        return name

    def tensor(self, value: Value, *, array: np.ndarray | None = None, axis: int | None = None) -> int:
        """The index of ``value``'s tensor (created on first use; ``array`` replaces its data,
        ``axis`` its quantized dimension)."""
        if value.name in self.indices and array is None:
            return self.indices[value.name]
        data = value.const if array is None else array
        quant = value.quant
        scale = None if quant is None else list(np.asarray(quant.scale, np.float32).reshape(-1).tolist())
        zero_point = None if quant is None else list(np.asarray(quant.zero_point).reshape(-1).astype(int).tolist())
        dimension = axis if axis is not None else (quant.axis or 0) if quant is not None else 0
        shape = value.shape if data is None else data.shape
        index = self._add(value.name if array is None else self.fresh(value.name), shape, value.dtype.value,
                          data, scale, zero_point, dimension)
        if array is None:
            self.indices[value.name] = index
        return index

    def constant(self, base: str, array: npt.ArrayLike, dtype: str = "int32") -> int:
        """A new constant tensor (shape arguments: sizes, paddings, permutations, axes)."""
        array = np.asarray(array, dtype=dtype)
        return self._add(self.fresh(base), array.shape, dtype, array, None, None, 0)

    def scratch(self, base: str, like: Value, shape: tuple[int, ...]) -> int:
        """A new activation tensor with ``like``'s dtype and quantization."""
        quant = like.quant
        return self._add(self.fresh(base), shape, like.dtype.value, None,
                         None if quant is None else list(np.asarray(quant.scale, np.float32).reshape(-1).tolist()),
                         None if quant is None else list(np.asarray(quant.zero_point).reshape(-1).astype(int).tolist()), 0)

    def _add(self, name, shape, dtype, data, scale, zero_point, dimension) -> int:
        if dtype not in TENSOR_TYPES:
            raise UnsupportedError(f"tensor {name!r} is {dtype}; TFLite files take {', '.join(TENSOR_TYPES)}")
        buffer = 0
        if data is not None:
            little = np.ascontiguousarray(data, dtype=np.dtype(dtype).newbyteorder("<"))
            self.model.buffers.append(little.tobytes())
            buffer = len(self.model.buffers) - 1
        self.model.tensors.append(FlatTensor(name, [int(d) for d in shape], TENSOR_TYPES[dtype], buffer,
                                             scale, zero_point, dimension))
        return len(self.model.tensors) - 1

    def operator(self, op: str, inputs: list[int], outputs: list[int], table: str | None = None,
                 options: dict | None = None) -> None:
        code = OPCODES[op]
        opcodes = [o.builtin_code for o in self.model.opcodes]
        if code not in opcodes:
            self.model.opcodes.append(FlatOpcode(code, VERSIONS.get(op, 1)))
            opcodes.append(code)
        self.model.operators.append(FlatOperator(opcodes.index(code), inputs, outputs, table, options or {}))

    def io(self, node: Node) -> tuple[list[int], list[int]]:
        """Tensor indices of the node's inputs (-1 for an omitted one) and outputs."""
        return ([-1 if v is None else self.tensor(v) for v in node.inputs], [self.tensor(v) for v in node.outputs])


def activation(node: Node) -> int:
    """TFLite's fused activation for the node's clamp attributes."""
    key: tuple[float | None, ...] = (node.attrs.get("activation_min"), node.attrs.get("activation_max"))
    key = tuple(None if bound is None else float(bound) for bound in key)
    if key not in ACTIVATIONS:
        raise UnsupportedError(f"{_where(node)}: the fused clamp [{key[0]}, {key[1]}] is none of TFLite's "
                               "RELU, RELU6, RELU_N1_TO_1; keep the clamp as a separate node")
    return ACTIVATIONS[key]


def padding(node: Node, in_hw, kernel_hw, strides, dilations) -> int | None:
    """SAME or VALID when the node's explicit pads equal what TFLite computes, else None."""
    top, left, bottom, right = node.attrs["pads"]
    if not any((top, left, bottom, right)):
        return Padding.VALID
    for size, kernel, stride, dilation, (before, after) in zip(in_hw, kernel_hw, strides, dilations,
                                                               ((top, bottom), (left, right))):
        out = -(-size // stride)
        total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
        if (before, after) != (total // 2, total - total // 2):
            return None
    return Padding.SAME


def quantized_graph_check(graph: Graph) -> None:
    kind = precision(graph)
    if kind != "integer":
        from ..ir.precision import float_nodes
        names = float_nodes(graph)
        raise UnsupportedError(f"{graph.name}: a {kind} graph"
                               f"{' (float nodes: ' + ', '.join(names[:6]) + ')' if names else ''}; a "
                               "full-integer TFLite file needs every compute node quantized (write ONNX QDQ "
                               "for a mixed-precision model, or quantize without --keep-float)")


def to_tflite(graph: Graph) -> bytes:
    """The TFLite flatbuffer of the quantized ``graph`` (module docstring)."""
    from . import tflite_ops  # noqa: F401  (registers the op writers)

    quantized_graph_check(graph)
    builder = TfliteBuilder(graph)
    builder.model.inputs = [builder.tensor(v) for v in graph.inputs]
    for node in graph.nodes:
        if node.op not in WRITERS:
            raise UnsupportedError(f"{_where(node)}: no TFLite writer for {node.op}; writable ops: "
                                   f"{', '.join(sorted(WRITERS))} (write ONNX QDQ instead)")
        WRITERS[node.op](builder, node)
    builder.model.outputs = [builder.tensor(v) for v in graph.outputs]
    return build_flatbuffer(builder.model)


def export_tflite(graph: Graph, path: str | Path) -> Path:
    """Write ``graph`` as a full-integer TFLite file to ``path`` (atomic); returns the path."""
    from ..safe_io import write_bytes

    return write_bytes(path, to_tflite(graph), "-o")
