"""Write tiny TFLite flatbuffers in code, for tests that need a model no shared file provides
(one op with given options, an unsupported op, a dynamic dimension, float16 weights ...).

Built with the ``flatbuffers`` Builder and the ``tflite`` package's generated builder
functions; LiteRT runs the results, so they double as independent references.

    tensors = [Tensor("x", (1, 4, 4, 2)), Tensor("w", (3, 1, 1, 2), data=w),
               Tensor("b", (3,), data=b), Tensor("y", (1, 4, 4, 3))]
    data = build_model(tensors, [Op("CONV_2D", [0, 1, 2], [3], {"padding": 1})], [0], [3])
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import flatbuffers
import numpy as np
import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

OPCODES = {name: code for code, name in BUILTIN_OPCODE2NAME.items()}
TENSOR_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6,
                "int16": 7, "int8": 9}
# The options table of each builtin op a test uses (schema names).
OPTIONS_TABLES = {
    "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
    "CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions", "FULLY_CONNECTED": "FullyConnectedOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions",
    "SOFTMAX": "SoftmaxOptions", "CONCATENATION": "ConcatenationOptions",
    "RESHAPE": "ReshapeOptions", "STRIDED_SLICE": "StridedSliceOptions", "MEAN": "ReducerOptions",
    "SQUEEZE": "SqueezeOptions", "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions",
    "LEAKY_RELU": "LeakyReluOptions", "MIRROR_PAD": "MirrorPadOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions", "BATCH_MATMUL": "BatchMatMulOptions",
    "TRANSPOSE": "TransposeOptions", "PAD": "PadOptions", "PADV2": "PadV2Options",
    "EXPAND_DIMS": "ExpandDimsOptions", "SLICE": "SliceOptions", "GATHER": "GatherOptions",
    "PACK": "PackOptions", "UNPACK": "UnpackOptions", "SHAPE": "ShapeOptions", "TILE": "TileOptions",
    "REDUCE_MAX": "ReducerOptions", "REDUCE_MIN": "ReducerOptions", "SUM": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions", "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions",
    "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
    "SQUARED_DIFFERENCE": "SquaredDifferenceOptions", "LOG_SOFTMAX": "LogSoftmaxOptions",
    "CAST": "CastOptions", "FILL": "FillOptions", "GELU": "GeluOptions",
    "LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalizationOptions",
}


@dataclass
class Tensor:
    name: str
    shape: Sequence[int]
    dtype: str = "float32"
    data: np.ndarray | None = None          # constant contents (stored as its dtype's bytes)
    quant: tuple[Sequence[float], Sequence[int], int] | None = None  # scales, zero points, axis
    shape_signature: Sequence[int] | None = None


@dataclass
class Op:
    op: str                                  # builtin name, or "CUSTOM"
    inputs: Sequence[int]
    outputs: Sequence[int]
    options: dict[str, Any] = field(default_factory=dict)   # schema field names, snake_case
    custom_code: str | None = None


def _camel(name: str) -> str:
    return "".join(part.capitalize() if not part[0].isdigit() else part.upper()
                   for part in name.split("_"))


def _vector(builder: flatbuffers.Builder, values: Sequence, dtype: str) -> int:
    return builder.CreateNumpyVector(np.asarray(values, dtype=dtype))


def _table_vector(builder: flatbuffers.Builder, offsets: list[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _bytes_vector(builder: flatbuffers.Builder, data: bytes) -> int:
    builder.StartVector(1, len(data), 16)    # 16-byte aligned, as TFLite's converter does
    builder.head -= len(data)
    builder.Bytes[builder.head:builder.head + len(data)] = data
    return builder.EndVector()


def _options(builder: flatbuffers.Builder, table: str, options: dict[str, Any]) -> int:
    module = importlib.import_module(f"tflite.{table}")
    vectors = {key: _vector(builder, value, "int32") for key, value in options.items()
               if isinstance(value, (list, tuple))}
    getattr(module, f"{table}Start")(builder)
    for key, value in options.items():
        getattr(module, f"{table}Add{_camel(key)}")(builder, vectors.get(key, value))
    return getattr(module, f"{table}End")(builder)


def _quantization(builder: flatbuffers.Builder, quant) -> int:
    scales, zero_points, axis = quant
    scale_vector = _vector(builder, scales, "float32")
    zero_vector = _vector(builder, zero_points, "int64")
    tflite.QuantizationParametersStart(builder)
    tflite.QuantizationParametersAddScale(builder, scale_vector)
    tflite.QuantizationParametersAddZeroPoint(builder, zero_vector)
    tflite.QuantizationParametersAddQuantizedDimension(builder, axis)
    return tflite.QuantizationParametersEnd(builder)


def _tensor(builder: flatbuffers.Builder, tensor: Tensor, buffer: int) -> int:
    name = builder.CreateString(tensor.name)
    shape = _vector(builder, tensor.shape, "int32")
    signature = (None if tensor.shape_signature is None
                 else _vector(builder, tensor.shape_signature, "int32"))
    quant = None if tensor.quant is None else _quantization(builder, tensor.quant)
    tflite.TensorStart(builder)
    tflite.TensorAddShape(builder, shape)
    tflite.TensorAddType(builder, TENSOR_TYPES[tensor.dtype])
    tflite.TensorAddBuffer(builder, buffer)
    tflite.TensorAddName(builder, name)
    if quant is not None:
        tflite.TensorAddQuantization(builder, quant)
    if signature is not None:
        tflite.TensorAddShapeSignature(builder, signature)
    return tflite.TensorEnd(builder)


def _operator(builder: flatbuffers.Builder, op: Op, opcode_index: int) -> int:
    table = OPTIONS_TABLES.get(op.op)
    options = _options(builder, table, op.options) if table else None
    inputs, outputs = _vector(builder, op.inputs, "int32"), _vector(builder, op.outputs, "int32")
    tflite.OperatorStart(builder)
    tflite.OperatorAddOpcodeIndex(builder, opcode_index)
    tflite.OperatorAddInputs(builder, inputs)
    tflite.OperatorAddOutputs(builder, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(builder, getattr(tflite.BuiltinOptions, table))
        tflite.OperatorAddBuiltinOptions(builder, options)
    return tflite.OperatorEnd(builder)


def _operator_code(builder: flatbuffers.Builder, name: str, custom: str | None) -> int:
    custom_offset = builder.CreateString(custom) if custom else None
    code = OPCODES[name]
    tflite.OperatorCodeStart(builder)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(builder, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(builder, code)
    tflite.OperatorCodeAddVersion(builder, 1)
    if custom_offset is not None:
        tflite.OperatorCodeAddCustomCode(builder, custom_offset)
    return tflite.OperatorCodeEnd(builder)


def _buffer(builder: flatbuffers.Builder, data: bytes, external: tuple[int, int] | None) -> int:
    vector = _bytes_vector(builder, data) if data and external is None else None
    tflite.BufferStart(builder)
    if vector is not None:
        tflite.BufferAddData(builder, vector)
    if external is not None:
        tflite.BufferAddOffset(builder, external[0])
        tflite.BufferAddSize(builder, external[1])
    return tflite.BufferEnd(builder)


def build_model(tensors: list[Tensor], ops: list[Op], inputs: Sequence[int],
                outputs: Sequence[int], *, description: str = "mcudeploy test model",
                extra_subgraphs: int = 0, external_buffers: bool = False) -> bytes:
    """The bytes of a TFLite model with one main subgraph (plus ``extra_subgraphs`` empty
    ones). Buffer 0 is the empty sentinel; each constant tensor gets its own buffer.

    ``external_buffers`` stores constant data after the flatbuffer, referenced by
    ``Buffer.offset`` / ``size``, as the converter does for models over 2 GB."""
    if not external_buffers:
        return _build(tensors, ops, inputs, outputs, description, extra_subgraphs, None)
    # The flatbuffer's size does not depend on the (non-zero) offsets: measure, then place.
    placeholder = _build(tensors, ops, inputs, outputs, description, extra_subgraphs, {})
    blobs = [np.asarray(t.data, dtype=t.dtype).tobytes() for t in tensors if t.data is not None]
    layout, position = {}, len(placeholder)
    for number, blob in enumerate(blobs):
        position += -position % 16
        layout[number] = (position, len(blob))
        position += len(blob)
    head = _build(tensors, ops, inputs, outputs, description, extra_subgraphs, layout)
    assert len(head) == len(placeholder)
    tail = bytearray()
    for number, blob in enumerate(blobs):
        tail += bytes(layout[number][0] - len(head) - len(tail)) + blob
    return head + bytes(tail)


def _build(tensors, ops, inputs, outputs, description, extra_subgraphs,
           external: dict[int, tuple[int, int]] | None) -> bytes:
    builder = flatbuffers.Builder(1024)
    buffer_data = [b""]
    tensor_offsets = []
    for tensor in tensors:
        buffer = 0
        if tensor.data is not None:
            array = np.asarray(tensor.data, dtype=tensor.dtype).reshape(tuple(tensor.shape))
            buffer_data.append(array.astype(array.dtype.newbyteorder("<")).tobytes())
            buffer = len(buffer_data) - 1
        else:
            buffer_data.append(b"")
            buffer = len(buffer_data) - 1
        tensor_offsets.append(_tensor(builder, tensor, buffer))
    codes = list(dict.fromkeys((op.op, op.custom_code) for op in ops))
    op_offsets = [_operator(builder, op, codes.index((op.op, op.custom_code))) for op in ops]
    subgraphs = [_subgraph(builder, tensor_offsets, op_offsets, inputs, outputs, "main")]
    subgraphs += [_subgraph(builder, [], [], [], [], f"extra{i}") for i in range(extra_subgraphs)]
    code_offsets = [_operator_code(builder, name, custom) for name, custom in codes]
    constant_number = iter(range(len(buffer_data)))
    buffer_offsets = []
    for data in buffer_data:
        place = None
        if external is not None and data:
            place = external.get(next(constant_number), (2, len(data)))
        buffer_offsets.append(_buffer(builder, data, place))
    description_offset = builder.CreateString(description)
    code_vector = _table_vector(builder, code_offsets)
    subgraph_vector = _table_vector(builder, subgraphs)
    buffer_vector = _table_vector(builder, buffer_offsets)
    tflite.ModelStart(builder)
    tflite.ModelAddVersion(builder, 3)
    tflite.ModelAddOperatorCodes(builder, code_vector)
    tflite.ModelAddSubgraphs(builder, subgraph_vector)
    tflite.ModelAddDescription(builder, description_offset)
    tflite.ModelAddBuffers(builder, buffer_vector)
    builder.Finish(tflite.ModelEnd(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _subgraph(builder: flatbuffers.Builder, tensors: list[int], ops: list[int],
              inputs: Sequence[int], outputs: Sequence[int], name: str) -> int:
    name_offset = builder.CreateString(name)
    tensor_vector, op_vector = _table_vector(builder, tensors), _table_vector(builder, ops)
    input_vector = _vector(builder, inputs, "int32")
    output_vector = _vector(builder, outputs, "int32")
    tflite.SubGraphStart(builder)
    tflite.SubGraphAddTensors(builder, tensor_vector)
    tflite.SubGraphAddInputs(builder, input_vector)
    tflite.SubGraphAddOutputs(builder, output_vector)
    tflite.SubGraphAddOperators(builder, op_vector)
    tflite.SubGraphAddName(builder, name_offset)
    return tflite.SubGraphEnd(builder)
