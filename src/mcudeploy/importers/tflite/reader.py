"""Read a TFLite flatbuffer into plain, fully checked Python records.

Input: the file's bytes. Output: a :class:`ModelRecord` (version, description, operator
codes resolved to names, the tensors / operators / inputs / outputs of subgraph 0, and the
raw bytes of every buffer those tensors use). Nothing else in the importer touches the
flatbuffer, so every way a damaged file can fail is caught here, in one place.

Python flatbuffers does not bounds-check: a damaged file surfaces as ``IndexError``,
``struct.error``, ``ValueError`` ... from deep inside the generated accessors, or worse as a
vector length of four billion. :func:`read_model` therefore (1) checks the size and the
``TFL3`` identifier first, (2) checks every vector length against the file size before
iterating, and (3) turns any exception raised while reading into a
:class:`~mcudeploy.errors.ModelFormatError` naming the file.

The op code of an operator is ``max(deprecated_builtin_code, builtin_code)`` (schema 3a:
codes above 127 live only in ``builtin_code``, older files only fill the deprecated byte).
Builtin options are read generically: every scalar or vector field of the options table,
keyed by its schema name in snake_case (``stride_w``, ``fused_activation_function``).
"""
from __future__ import annotations

import functools
import inspect
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

from ...errors import ModelFormatError

IDENTIFIER = b"TFL3"
MINIMUM_FILE_BYTES = 24          # root offset + identifier + the smallest Model table
CUSTOM_OPCODE = 32
_PARSE_ERRORS = (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError,
                 RecursionError, OverflowError, AttributeError, KeyError, MemoryError)


@dataclass(frozen=True)
class QuantRecord:
    scale: np.ndarray            # float32, as stored
    zero_point: np.ndarray       # int64, as stored (may be empty)
    quantized_dimension: int


@dataclass(frozen=True)
class TensorRecord:
    index: int
    name: str | None
    type_code: int               # tflite.TensorType
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    buffer: int
    quant: QuantRecord | None
    is_variable: bool
    has_sparsity: bool


@dataclass(frozen=True)
class OperatorRecord:
    index: int
    op_name: str                 # "CONV_2D", or "CUSTOM" (see custom_code)
    custom_code: str | None
    inputs: tuple[int, ...]      # tensor indices, -1 for an omitted optional input
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelRecord:
    version: int
    description: str | None
    subgraph_count: int
    subgraph_name: str | None
    tensors: list[TensorRecord]
    operators: list[OperatorRecord]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    buffers: dict[int, bytes]    # buffer index -> raw bytes (only non-empty buffers in use)


def read_model(path: Path, data: bytes) -> ModelRecord:
    """Parse ``data`` (the bytes of ``path``); raise ``ModelFormatError`` if it is not a
    readable TFLite flatbuffer."""
    check_header(path, data)
    try:
        return _Reader(data).model()
    except _PARSE_ERRORS as err:
        raise ModelFormatError(f"{path}: truncated or corrupt TFLite flatbuffer "
                               f"({type(err).__name__}: {err}); re-export or re-download "
                               "the model") from None


def check_header(path: Path, data: bytes) -> None:
    """Size and identifier checks made before any flatbuffer access."""
    if len(data) < MINIMUM_FILE_BYTES:
        raise ModelFormatError(f"{path}: truncated or corrupt TFLite flatbuffer: only "
                               f"{len(data)} bytes (a TFLite model has at least "
                               f"{MINIMUM_FILE_BYTES})")
    if data[4:8] != IDENTIFIER:
        raise ModelFormatError(f"{path}: not a TFLite flatbuffer: file identifier is "
                               f"{bytes(data[4:8])!r}, expected {IDENTIFIER!r}")
    root = struct.unpack_from("<I", data, 0)[0]
    if not 8 <= root < len(data):
        raise ModelFormatError(f"{path}: truncated or corrupt TFLite flatbuffer: root table "
                               f"offset {root} is outside the {len(data)}-byte file")


def _snake(name: str) -> str:
    """``DilationHFactor`` -> ``dilation_h_factor`` (the schema's field name)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


@functools.lru_cache(maxsize=None)
def _option_fields(options_class: type) -> tuple[tuple[str, str, bool], ...]:
    """``(accessor, snake_name, is_vector)`` for every field of a generated options class."""
    fields = []
    for name, member in vars(options_class).items():
        if name.startswith("_") or not callable(member) or name == "Init":
            continue
        if name.startswith("GetRootAs") or name.endswith(("IsNone", "Length", "AsNumpy",
                                                          "BufferHasIdentifier")):
            continue
        parameters = list(inspect.signature(member).parameters)
        if parameters == ["self"]:
            fields.append((name, _snake(name), False))
        elif parameters == ["self", "j"] and hasattr(options_class, name + "AsNumpy"):
            fields.append((name + "AsNumpy", _snake(name), True))
    return tuple(fields)


_OPTIONS_CLASSES = {code: getattr(tflite, name, None)
                    for name, code in vars(tflite.BuiltinOptions).items()
                    if not name.startswith("_")}


class _Reader:
    """One pass over the flatbuffer; every vector length is checked before use."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.root = tflite.Model.GetRootAsModel(data, 0)
        self.external_buffers = False

    def length(self, count: int, item_bytes: int, what: str) -> int:
        if count < 0 or count * item_bytes > len(self.data):
            raise ValueError(f"{what} claims {count} entries, more than the file can hold")
        return count

    def text(self, raw: bytes | None) -> str | None:
        if raw is None:
            return None
        if len(raw) > len(self.data):
            raise ValueError("string longer than the file")
        return raw.decode("utf-8")

    def ints(self, array: Any) -> tuple[int, ...]:
        return () if isinstance(array, int) else tuple(int(v) for v in array)

    def model(self) -> ModelRecord:
        model = self.root
        op_names = self.operator_names()
        subgraph_count = self.length(model.SubgraphsLength(), 4, "subgraph list")
        if subgraph_count == 0:
            raise ValueError("the model has no subgraph")
        subgraph = model.Subgraphs(0)
        tensor_count = self.length(subgraph.TensorsLength(), 4, "tensor list")
        tensors = [self.tensor(subgraph.Tensors(i), i) for i in range(tensor_count)]
        operator_count = self.length(subgraph.OperatorsLength(), 4, "operator list")
        operators = [self.operator(subgraph.Operators(i), i, op_names)
                     for i in range(operator_count)]
        buffer_count = self.length(model.BuffersLength(), 4, "buffer list")
        used = sorted({t.buffer for t in tensors if t.buffer != 0})
        if used and used[-1] >= buffer_count:
            raise ValueError(f"a tensor uses buffer {used[-1]}, the model has {buffer_count}")
        buffers = {index: self.buffer(index) for index in used}
        if len(self.data) % 4 and not self.external_buffers:
            # A finished flatbuffer is a whole number of 4-byte words (the root offset's
            # alignment); a ragged size means bytes are missing even if nothing we read is cut.
            raise ValueError(f"the file size {len(self.data)} is not a multiple of 4")
        return ModelRecord(
            version=int(model.Version()), description=self.text(model.Description()),
            subgraph_count=subgraph_count, subgraph_name=self.text(subgraph.Name()),
            tensors=tensors, operators=operators,
            inputs=self.ints(subgraph.InputsAsNumpy()),
            outputs=self.ints(subgraph.OutputsAsNumpy()),
            buffers={k: v for k, v in buffers.items() if v})

    def operator_names(self) -> list[tuple[str, str | None]]:
        count = self.length(self.root.OperatorCodesLength(), 4, "operator code list")
        names = []
        for index in range(count):
            code = self.root.OperatorCodes(index)
            builtin = max(int(code.DeprecatedBuiltinCode()), int(code.BuiltinCode()))
            name = BUILTIN_OPCODE2NAME.get(builtin, f"BUILTIN_{builtin}")
            custom = self.text(code.CustomCode()) if builtin == CUSTOM_OPCODE else None
            names.append((name, custom))
        return names

    def tensor(self, tensor: Any, index: int) -> TensorRecord:
        self.length(tensor.ShapeLength(), 4, f"tensor {index} shape")
        signature = (None if tensor.ShapeSignatureIsNone()
                     else self.ints(tensor.ShapeSignatureAsNumpy()))
        return TensorRecord(
            index=index, name=self.text(tensor.Name()), type_code=int(tensor.Type()),
            shape=self.ints(tensor.ShapeAsNumpy()), shape_signature=signature,
            buffer=int(tensor.Buffer()), quant=self.quantization(tensor.Quantization()),
            is_variable=bool(tensor.IsVariable()), has_sparsity=tensor.Sparsity() is not None)

    def quantization(self, quant: Any) -> QuantRecord | None:
        if quant is None or quant.ScaleIsNone() or quant.ScaleLength() == 0:
            return None
        self.length(quant.ScaleLength(), 4, "quantization scales")
        scale = np.array(quant.ScaleAsNumpy(), dtype=np.float32)
        zero_point = (np.zeros(0, np.int64) if quant.ZeroPointIsNone()
                      else np.array(quant.ZeroPointAsNumpy(), dtype=np.int64))
        return QuantRecord(scale, zero_point, int(quant.QuantizedDimension()))

    def operator(self, operator: Any, index: int, op_names: list) -> OperatorRecord:
        opcode_index = int(operator.OpcodeIndex())
        if not 0 <= opcode_index < len(op_names):
            raise ValueError(f"operator {index} uses op code {opcode_index}, the model has "
                             f"{len(op_names)}")
        name, custom = op_names[opcode_index]
        return OperatorRecord(index=index, op_name=name, custom_code=custom,
                              inputs=self.ints(operator.InputsAsNumpy()),
                              outputs=self.ints(operator.OutputsAsNumpy()),
                              options=self.options(operator))

    def options(self, operator: Any) -> dict[str, Any]:
        options_class = _OPTIONS_CLASSES.get(int(operator.BuiltinOptionsType()))
        table = operator.BuiltinOptions()
        if options_class is None or table is None:
            return {}
        options = options_class()
        options.Init(table.Bytes, table.Pos)
        result: dict[str, Any] = {}
        for accessor, name, is_vector in _option_fields(options_class):
            value = getattr(options, accessor)()
            if is_vector:
                result[name] = self.ints(value) if isinstance(value, (int, np.ndarray)) else value
            elif isinstance(value, (bool, int, float, np.integer, np.floating)):
                result[name] = value.item() if isinstance(value, np.generic) else value
        return result

    def buffer(self, index: int) -> bytes:
        buffer = self.root.Buffers(index)
        offset, size = int(buffer.Offset()), int(buffer.Size())
        if offset > 1:  # large models keep buffers after the flatbuffer, at a file offset
            self.external_buffers = True
            if offset + size > len(self.data):
                raise ValueError(f"buffer {index} ({size} bytes at offset {offset}) extends past "
                                 f"the end of the {len(self.data)}-byte file")
            return bytes(self.data[offset:offset + size])
        if buffer.DataIsNone():
            return b""
        self.length(buffer.DataLength(), 1, f"buffer {index}")
        return buffer.DataAsNumpy().tobytes()
