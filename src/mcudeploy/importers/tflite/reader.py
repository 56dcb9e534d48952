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
The tables are read through :class:`~.flatbuffer_view.TableView` and the generated
:mod:`.schema_tables`, not through the ``tflite`` package (whose import costs more than the
whole read).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from .flatbuffer_view import TableView
from .schema_tables import BUILTIN_OPERATORS

IDENTIFIER = b"TFL3"
MINIMUM_FILE_BYTES = 24          # root offset + identifier + the smallest Model table
CUSTOM_OPCODE = 32
GREATER_OPCODES = 127            # schema 3a: codes from here on live only in builtin_code
_PARSE_ERRORS = (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError,
                 RecursionError, OverflowError, AttributeError, KeyError, MemoryError)


@dataclass(frozen=True)
class QuantRecord:
    """A tensor's quantization as stored in the file."""
    scale: np.ndarray            # float32, as stored
    zero_point: np.ndarray       # int64, as stored (may be empty)
    quantized_dimension: int


@dataclass(frozen=True)
class TensorRecord:
    """One tensor of subgraph 0 as stored in the file."""
    index: int
    name: str | None
    type_code: int               # schema_tables.TensorType
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    buffer: int
    quant: QuantRecord | None
    is_variable: bool
    has_sparsity: bool


@dataclass(frozen=True)
class OperatorRecord:
    """One operator of subgraph 0 as stored in the file."""
    index: int
    op_name: str                 # "CONV_2D", or "CUSTOM" (see custom_code)
    custom_code: str | None
    inputs: tuple[int, ...]      # tensor indices, -1 for an omitted optional input
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelRecord:
    """The parts of a TFLite model the importer reads."""
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


class _Reader:
    """One pass over the flatbuffer; every vector length is checked before use."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.root = TableView.of(data, struct.unpack_from("<I", data, 0)[0], "Model")
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

    def entries(self, table: TableView, field: str, table_name: str, what: str) -> list[TableView]:
        count = self.length(table.length(field), 4, what)
        views = (table.item(field, index, table_name) for index in range(count))
        return [view for view in views if view is not None]

    def model(self) -> ModelRecord:
        model = self.root
        op_names = self.operator_names()
        subgraph_count = self.length(model.length("subgraphs"), 4, "subgraph list")
        if subgraph_count == 0:
            raise ValueError("the model has no subgraph")
        subgraph = model.item("subgraphs", 0, "SubGraph")
        assert subgraph is not None
        tensors = [self.tensor(t, i) for i, t in enumerate(self.entries(subgraph, "tensors", "Tensor", "tensor list"))]
        operators = [self.operator(o, i, op_names)
                     for i, o in enumerate(self.entries(subgraph, "operators", "Operator", "operator list"))]
        buffer_count = self.length(model.length("buffers"), 4, "buffer list")
        used = sorted({t.buffer for t in tensors if t.buffer != 0})
        if used and used[-1] >= buffer_count:
            raise ValueError(f"a tensor uses buffer {used[-1]}, the model has {buffer_count}")
        buffers = {index: self.buffer(index) for index in used}
        if len(self.data) % 4 and not self.external_buffers:
            # A finished flatbuffer is a whole number of 4-byte words (the root offset's
            # alignment); a ragged size means bytes are missing even if nothing we read is cut.
            raise ValueError(f"the file size {len(self.data)} is not a multiple of 4")
        return ModelRecord(
            version=int(model.scalar("version")), description=self.text(model.string("description")),
            subgraph_count=subgraph_count, subgraph_name=self.text(subgraph.string("name")),
            tensors=tensors, operators=operators,
            inputs=self.ints(subgraph.numbers("inputs")),
            outputs=self.ints(subgraph.numbers("outputs")),
            buffers={k: v for k, v in buffers.items() if v})

    def operator_names(self) -> list[tuple[str, str | None]]:
        names = []
        for code in self.entries(self.root, "operator_codes", "OperatorCode", "operator code list"):
            deprecated = int(code.scalar("deprecated_builtin_code"))
            stored = int(code.scalar("builtin_code") or 0)
            builtin = max(deprecated, stored if stored >= GREATER_OPCODES else deprecated)
            name = BUILTIN_OPERATORS.get(builtin, f"BUILTIN_{builtin}")
            custom = self.text(code.string("custom_code")) if builtin == CUSTOM_OPCODE else None
            names.append((name, custom))
        return names

    def tensor(self, tensor: TableView, index: int) -> TensorRecord:
        self.length(tensor.length("shape"), 4, f"tensor {index} shape")
        signature = self.ints(tensor.numbers("shape_signature")) if tensor.present("shape_signature") else None
        return TensorRecord(
            index=index, name=self.text(tensor.string("name")), type_code=int(tensor.scalar("type")),
            shape=self.ints(tensor.numbers("shape")), shape_signature=signature,
            buffer=int(tensor.scalar("buffer")),
            quant=self.quantization(tensor.child("quantization", "QuantizationParameters")),
            is_variable=bool(tensor.scalar("is_variable")), has_sparsity=tensor.present("sparsity"))

    def quantization(self, quant: TableView | None) -> QuantRecord | None:
        if quant is None or quant.length("scale") == 0:
            return None
        self.length(quant.length("scale"), 4, "quantization scales")
        scale = np.array(quant.numbers("scale"), dtype=np.float32)
        zero_point = (np.array(quant.numbers("zero_point"), dtype=np.int64) if quant.present("zero_point")
                      else np.zeros(0, np.int64))
        return QuantRecord(scale, zero_point, int(quant.scalar("quantized_dimension")))

    def operator(self, operator: TableView, index: int, op_names: list) -> OperatorRecord:
        opcode_index = int(operator.scalar("opcode_index"))
        if not 0 <= opcode_index < len(op_names):
            raise ValueError(f"operator {index} uses op code {opcode_index}, the model has "
                             f"{len(op_names)}")
        name, custom = op_names[opcode_index]
        return OperatorRecord(index=index, op_name=name, custom_code=custom,
                              inputs=self.ints(operator.numbers("inputs")),
                              outputs=self.ints(operator.numbers("outputs")),
                              options=self.options(operator))

    def options(self, operator: TableView) -> dict[str, Any]:
        table = operator.union("builtin_options")
        options = (TableView.options(table.Bytes, table.Pos, int(operator.scalar("builtin_options_type")))
                   if table is not None else None)
        if options is None:
            return {}
        result: dict[str, Any] = {}
        for name, kind in options.number_fields():
            result[name] = self.ints(options.numbers(name)) if kind == "vector" else options.scalar(name)
        return result

    def buffer(self, index: int) -> bytes:
        buffer = self.root.item("buffers", index, "Buffer")
        assert buffer is not None
        offset, size = int(buffer.scalar("offset")), int(buffer.scalar("size"))
        if offset > 1:  # large models keep buffers after the flatbuffer, at a file offset
            self.external_buffers = True
            if offset + size > len(self.data):
                raise ValueError(f"buffer {index} ({size} bytes at offset {offset}) extends past "
                                 f"the end of the {len(self.data)}-byte file")
            return bytes(self.data[offset:offset + size])
        if not buffer.present("data"):
            return b""
        self.length(buffer.length("data"), 1, f"buffer {index}")
        return buffer.numbers("data").tobytes()
