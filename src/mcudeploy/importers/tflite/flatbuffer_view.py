"""A read-only view of one table of a TFLite flatbuffer, driven by the schema tables.

    TableView(data, position, "Tensor").scalar("buffer") -> int

The accessors do what the ``tflite`` package's generated code does, over the same
``flatbuffers.table.Table`` primitives (so a damaged file fails the same way), but find a
field's vtable slot, type and default in :mod:`.schema_tables` instead of in one generated
module per table: importing ``tflite`` imports ~200 such modules, most of the start-up of a
``mcudeploy plan``. A field that is absent reads as the schema's default (scalars), ``None``
(strings, tables, unions) or ``0`` (numeric vectors, like ``XAsNumpy``).
"""
from __future__ import annotations

from typing import Any

from flatbuffers import number_types
from flatbuffers.table import Table

from .schema_tables import OPTIONS, TABLES

_FLAGS = {"?": number_types.BoolFlags, "b": number_types.Int8Flags, "B": number_types.Uint8Flags,
          "h": number_types.Int16Flags, "H": number_types.Uint16Flags, "i": number_types.Int32Flags,
          "I": number_types.Uint32Flags, "q": number_types.Int64Flags, "Q": number_types.Uint64Flags,
          "f": number_types.Float32Flags, "d": number_types.Float64Flags}
_FIELDS = {name: {field[0]: field[1:] for field in fields} for name, fields in TABLES.items()}
_OPTION_FIELDS = {code: {field[0]: field[1:] for field in fields} for code, (_, fields) in OPTIONS.items()}


class TableView:
    """One table at ``position`` of ``data``; ``fields`` maps a snake-case field name to
    ``(vtable_offset, kind, struct_format, default)``."""

    __slots__ = ("table", "fields")

    def __init__(self, data: Any, position: int, fields: dict[str, tuple]) -> None:
        self.table = Table(data, position)
        self.fields = fields

    @classmethod
    def of(cls, data: Any, position: int, name: str) -> TableView:
        """The table ``name`` (a key of :data:`TABLES`) at ``position``."""
        return cls(data, position, _FIELDS[name])

    @classmethod
    def options(cls, data: Any, position: int, code: int) -> TableView | None:
        """The builtin options table of union code ``code``, None for an unknown code."""
        fields = _OPTION_FIELDS.get(code)
        return None if fields is None else cls(data, position, fields)

    def _offset(self, name: str) -> int:
        return self.table.Offset(self.fields[name][0])

    def present(self, name: str) -> bool:
        return self._offset(name) != 0

    def scalar(self, name: str) -> Any:
        _, kind, code, default = self.fields[name]
        offset = self._offset(name)
        if offset == 0:
            return default
        value = self.table.Get(_FLAGS[code], offset + self.table.Pos)
        return bool(value) if kind == "bool" else value

    def string(self, name: str) -> bytes | None:
        offset = self._offset(name)
        return self.table.String(offset + self.table.Pos) if offset else None

    def length(self, name: str) -> int:
        offset = self._offset(name)
        return self.table.VectorLen(offset) if offset else 0

    def numbers(self, name: str) -> Any:
        """A numeric vector as a numpy array (0 when absent, as the generated ``XAsNumpy``)."""
        offset = self._offset(name)
        return self.table.GetVectorAsNumpy(_FLAGS[self.fields[name][2]], offset) if offset else 0

    def child(self, name: str, table_name: str) -> TableView | None:
        offset = self._offset(name)
        if offset == 0:
            return None
        return TableView.of(self.table.Bytes, self.table.Indirect(offset + self.table.Pos), table_name)

    def item(self, name: str, index: int, table_name: str) -> TableView | None:
        """Entry ``index`` of a vector of tables."""
        offset = self._offset(name)
        if offset == 0:
            return None
        position = self.table.Indirect(self.table.Vector(offset) + index * 4)
        return TableView.of(self.table.Bytes, position, table_name)

    def union(self, name: str) -> Table | None:
        """The union value's table (its type is the ``<name>_type`` field)."""
        offset = self._offset(name)
        if offset == 0:
            return None
        value = Table(bytearray(), 0)
        self.table.Union(value, offset)
        return value

    def number_fields(self) -> list[tuple[str, str]]:
        """``(name, kind)`` of every scalar / bool / numeric vector field, in schema order."""
        return [(name, field[1]) for name, field in self.fields.items() if field[1] in ("scalar", "bool", "vector")]
