"""Plain records of a TFLite model -> the bytes of its flatbuffer (schema ``TFL3``).

Input: a :class:`FlatModel` (operator codes, one subgraph's tensors and operators, buffers,
metadata, signature); output: the flatbuffer, built with the ``flatbuffers`` Builder and the
``tflite`` schema package's generated builder functions (the package has no object API).
Used by :mod:`.tflite_writer` (the IR -> TFLite exporter) and by
``tools/make_uint8_io_models.py`` (which rewrites existing models).

Layout rules TFLite's converter follows and TFLite Micro relies on: buffer 0 is the empty
sentinel; constant data is a 16-byte aligned byte vector; builtin options are a table of
the op's options type, written field by field from a ``{snake_case_field: value}`` dict
(lists become int32 vectors); integers in quantization zero points are int64.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import flatbuffers
import numpy as np
import numpy.typing as npt
import tflite

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
DATA_ALIGNMENT = 16
TENSOR_TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6,
                "int16": 7, "int8": 9}


@dataclass
class FlatTensor:
    name: str
    shape: Sequence[int]
    type: int                                   # tflite.TensorType value
    buffer: int = 0                             # index into FlatModel.buffers (0: none)
    scale: Sequence[float] | None = None        # quantization, None: not quantized
    zero_point: Sequence[int] | None = None
    quantized_dimension: int = 0
    shape_signature: Sequence[int] | None = None
    is_variable: bool = False


@dataclass
class FlatOperator:
    opcode_index: int
    inputs: Sequence[int]                       # tensor indices, -1 for an omitted input
    outputs: Sequence[int]
    options_table: str | None = None            # e.g. "Conv2DOptions"
    options: dict[str, Any] = field(default_factory=dict)
    custom_options: bytes | None = None


@dataclass
class FlatOpcode:
    builtin_code: int
    version: int = 1
    custom_code: str | None = None


@dataclass
class FlatModel:
    opcodes: list[FlatOpcode]
    tensors: list[FlatTensor]
    operators: list[FlatOperator]
    inputs: list[int]
    outputs: list[int]
    buffers: list[bytes] = field(default_factory=lambda: [b""])
    description: str = "mcudeploy"
    subgraph_name: str = "main"
    metadata: list[tuple[str, int]] = field(default_factory=list)     # (name, buffer index)
    signature: tuple[str, list[tuple[str, int]], list[tuple[str, int]]] | None = None  # key, inputs, outputs


def camel(name: str) -> str:
    """``fused_activation_function`` -> ``FusedActivationFunction`` (schema accessor names)."""
    return "".join(part.capitalize() if not part[0].isdigit() else part.upper() for part in name.split("_"))


def _vector(builder: flatbuffers.Builder, values: npt.ArrayLike, dtype: npt.DTypeLike) -> int:
    return builder.CreateNumpyVector(np.asarray(values, dtype=dtype))


def _table_vector(builder: flatbuffers.Builder, offsets: list[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _bytes_vector(builder: flatbuffers.Builder, data: bytes) -> int:
    builder.StartVector(1, len(data), DATA_ALIGNMENT)
    builder.head -= len(data)
    builder.Bytes[builder.head:builder.head + len(data)] = data
    return builder.EndVector()


def _options(builder: flatbuffers.Builder, table: str, options: dict[str, Any]) -> int:
    module = importlib.import_module(f"tflite.{table}")
    vectors = {key: _vector(builder, value, np.asarray(value).dtype if isinstance(value, np.ndarray) else "int32")
               for key, value in options.items() if isinstance(value, (list, tuple, np.ndarray))}
    getattr(module, f"{table}Start")(builder)
    for key, value in options.items():
        getattr(module, f"{table}Add{camel(key)}")(builder, vectors.get(key, value))
    return getattr(module, f"{table}End")(builder)


def _quantization(builder: flatbuffers.Builder, tensor: FlatTensor) -> int:
    assert tensor.scale is not None and tensor.zero_point is not None  # a quantized tensor (the caller checks)
    scale = _vector(builder, tensor.scale, "float32")
    zero_point = _vector(builder, tensor.zero_point, "int64")
    tflite.QuantizationParametersStart(builder)
    tflite.QuantizationParametersAddScale(builder, scale)
    tflite.QuantizationParametersAddZeroPoint(builder, zero_point)
    tflite.QuantizationParametersAddQuantizedDimension(builder, tensor.quantized_dimension)
    return tflite.QuantizationParametersEnd(builder)


def _tensor(builder: flatbuffers.Builder, tensor: FlatTensor) -> int:
    name = builder.CreateString(tensor.name)
    shape = _vector(builder, tensor.shape, "int32")
    signature = None if tensor.shape_signature is None else _vector(builder, tensor.shape_signature, "int32")
    quant = None if tensor.scale is None else _quantization(builder, tensor)
    tflite.TensorStart(builder)
    tflite.TensorAddShape(builder, shape)
    tflite.TensorAddType(builder, tensor.type)
    tflite.TensorAddBuffer(builder, tensor.buffer)
    tflite.TensorAddName(builder, name)
    if quant is not None:
        tflite.TensorAddQuantization(builder, quant)
    if tensor.is_variable:
        tflite.TensorAddIsVariable(builder, True)
    if signature is not None:
        tflite.TensorAddShapeSignature(builder, signature)
    return tflite.TensorEnd(builder)


def _operator(builder: flatbuffers.Builder, operator: FlatOperator) -> int:
    options = _options(builder, operator.options_table, operator.options) if operator.options_table else None
    custom = _vector(builder, list(operator.custom_options), "uint8") if operator.custom_options else None
    inputs, outputs = _vector(builder, operator.inputs, "int32"), _vector(builder, operator.outputs, "int32")
    tflite.OperatorStart(builder)
    tflite.OperatorAddOpcodeIndex(builder, operator.opcode_index)
    tflite.OperatorAddInputs(builder, inputs)
    tflite.OperatorAddOutputs(builder, outputs)
    if options is not None:
        assert operator.options_table is not None  # options are written only with their table
        tflite.OperatorAddBuiltinOptionsType(builder, getattr(tflite.BuiltinOptions, operator.options_table))
        tflite.OperatorAddBuiltinOptions(builder, options)
    if custom is not None:
        tflite.OperatorAddCustomOptions(builder, custom)
    return tflite.OperatorEnd(builder)


def _opcode(builder: flatbuffers.Builder, opcode: FlatOpcode) -> int:
    custom = builder.CreateString(opcode.custom_code) if opcode.custom_code else None
    tflite.OperatorCodeStart(builder)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(builder, min(opcode.builtin_code, 127))
    tflite.OperatorCodeAddBuiltinCode(builder, opcode.builtin_code)
    tflite.OperatorCodeAddVersion(builder, opcode.version)
    if custom is not None:
        tflite.OperatorCodeAddCustomCode(builder, custom)
    return tflite.OperatorCodeEnd(builder)


def _buffer(builder: flatbuffers.Builder, data: bytes) -> int:
    vector = _bytes_vector(builder, data) if data else None
    tflite.BufferStart(builder)
    if vector is not None:
        tflite.BufferAddData(builder, vector)
    return tflite.BufferEnd(builder)


def _subgraph(builder: flatbuffers.Builder, model: FlatModel) -> int:
    name = builder.CreateString(model.subgraph_name)
    tensors = _table_vector(builder, [_tensor(builder, tensor) for tensor in model.tensors])
    operators = _table_vector(builder, [_operator(builder, operator) for operator in model.operators])
    inputs, outputs = _vector(builder, model.inputs, "int32"), _vector(builder, model.outputs, "int32")
    tflite.SubGraphStart(builder)
    tflite.SubGraphAddTensors(builder, tensors)
    tflite.SubGraphAddInputs(builder, inputs)
    tflite.SubGraphAddOutputs(builder, outputs)
    tflite.SubGraphAddOperators(builder, operators)
    tflite.SubGraphAddName(builder, name)
    return tflite.SubGraphEnd(builder)


def _metadata(builder: flatbuffers.Builder, entries: list[tuple[str, int]]) -> int:
    offsets = []
    for name, buffer in entries:
        text = builder.CreateString(name)
        tflite.MetadataStart(builder)
        tflite.MetadataAddName(builder, text)
        tflite.MetadataAddBuffer(builder, buffer)
        offsets.append(tflite.MetadataEnd(builder))
    return _table_vector(builder, offsets)


def _tensor_maps(builder: flatbuffers.Builder, entries: list[tuple[str, int]]) -> int:
    offsets = []
    for name, index in entries:
        text = builder.CreateString(name)
        tflite.TensorMapStart(builder)
        tflite.TensorMapAddName(builder, text)
        tflite.TensorMapAddTensorIndex(builder, index)
        offsets.append(tflite.TensorMapEnd(builder))
    return _table_vector(builder, offsets)


def _signature(builder: flatbuffers.Builder, signature) -> int:
    key, inputs, outputs = signature
    key_offset = builder.CreateString(key)
    input_maps, output_maps = _tensor_maps(builder, inputs), _tensor_maps(builder, outputs)
    tflite.SignatureDefStart(builder)
    tflite.SignatureDefAddInputs(builder, input_maps)
    tflite.SignatureDefAddOutputs(builder, output_maps)
    tflite.SignatureDefAddSignatureKey(builder, key_offset)
    tflite.SignatureDefAddSubgraphIndex(builder, 0)
    return _table_vector(builder, [tflite.SignatureDefEnd(builder)])


def build_flatbuffer(model: FlatModel) -> bytes:
    """The bytes of ``model`` as a ``.tflite`` file."""
    size = sum(len(data) + DATA_ALIGNMENT for data in model.buffers)
    builder = flatbuffers.Builder(size + 65536)
    buffers = _table_vector(builder, [_buffer(builder, data) for data in model.buffers])
    subgraphs = _table_vector(builder, [_subgraph(builder, model)])
    opcodes = _table_vector(builder, [_opcode(builder, opcode) for opcode in model.opcodes])
    metadata = _metadata(builder, model.metadata) if model.metadata else None
    signature = _signature(builder, model.signature) if model.signature else None
    description = builder.CreateString(model.description)
    tflite.ModelStart(builder)
    tflite.ModelAddVersion(builder, SCHEMA_VERSION)
    tflite.ModelAddOperatorCodes(builder, opcodes)
    tflite.ModelAddSubgraphs(builder, subgraphs)
    tflite.ModelAddDescription(builder, description)
    tflite.ModelAddBuffers(builder, buffers)
    if metadata is not None:
        tflite.ModelAddMetadata(builder, metadata)
    if signature is not None:
        tflite.ModelAddSignatureDefs(builder, signature)
    builder.Finish(tflite.ModelEnd(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())
