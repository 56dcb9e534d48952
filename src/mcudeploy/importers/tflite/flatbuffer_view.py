"""A read-only view of one table of a TFLite flatbuffer, driven by the schema tables.

    TableView.of(data, position, "Tensor").scalar("buffer") -> int

The accessors read what the ``tflite`` package's generated code reads (the flatbuffers
rules: a table starts with the signed offset of its vtable, a field's vtable slot holds its
offset in the table or 0 when absent, vectors and strings are a length then the data), with
struct directly, checking every offset as ``flatbuffers`` does; they find a field's vtable
slot, type and default in :mod:`.schema_tables` instead of in one generated module per
table: importing ``tflite`` imports ~200 such modules, most of the start-up of a
``mcudeploy plan``. A field that is absent reads as the schema's default (scalars), ``None``
(strings, tables, unions) or ``0`` (numeric vectors, like ``XAsNumpy``).
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from .schema_tables import OPTIONS, TABLES

_UOFFSET = struct.Struct("<I")
_SOFFSET = struct.Struct("<i")
_VOFFSET = struct.Struct("<H")
_SCALARS = {code: struct.Struct("<" + code) for code in "?bBhHiIqQfd"}
_NUMPY = {code: np.dtype("<" + code) for code in "?bBhHiIqQfd"}     # little-endian, as stored
_FIELDS = {name: {field[0]: field[1:] for field in fields} for name, fields in TABLES.items()}
_OPTION_FIELDS = {code: {field[0]: field[1:] for field in fields} for code, (_, fields) in OPTIONS.items()}
_LARGEST_OFFSET = 0xFFFFFFFF


def _checked(position: int) -> int:
    """``position`` if it is a valid unsigned 32-bit offset (what ``flatbuffers`` enforces
    before every read, raising TypeError), so that a damaged file never reads from the end."""
    if not 0 <= position <= _LARGEST_OFFSET:
        raise TypeError(f"offset {position} is not an unsigned 32-bit number")
    return position


class TableView:
    """One table at ``position`` of ``data``; ``fields`` maps a snake-case field name to
    ``(vtable_offset, kind, struct_format, default)``."""

    __slots__ = ("data", "position", "fields", "vtable", "vtable_end")

    def __init__(self, data: Any, position: int, fields: dict[str, tuple]) -> None:
        self.data, self.position, self.fields = data, position, fields
        self.vtable = _checked(position - _SOFFSET.unpack_from(data, _checked(position))[0])
        self.vtable_end = _VOFFSET.unpack_from(data, self.vtable)[0]

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
        slot = self.fields[name][0]
        return _VOFFSET.unpack_from(self.data, self.vtable + slot)[0] if slot < self.vtable_end else 0

    def _indirect(self, position: int) -> int:
        return position + _UOFFSET.unpack_from(self.data, _checked(position))[0]

    def present(self, name: str) -> bool:
        return self._offset(name) != 0

    def scalar(self, name: str) -> Any:
        _, kind, code, default = self.fields[name]
        offset = self._offset(name)
        if offset == 0:
            return default
        value = _SCALARS[code].unpack_from(self.data, _checked(offset + self.position))[0]
        return bool(value) if kind == "bool" else value

    def string(self, name: str) -> bytes | None:
        offset = self._offset(name)
        if offset == 0:
            return None
        start = self._indirect(offset + self.position)
        length = _UOFFSET.unpack_from(self.data, start)[0]
        return bytes(self.data[start + 4:start + 4 + length])

    def length(self, name: str) -> int:
        offset = self._offset(name)
        return _UOFFSET.unpack_from(self.data, self._indirect(offset + self.position))[0] if offset else 0

    def _vector(self, offset: int) -> int:
        return self._indirect(offset + self.position) + 4

    def numbers(self, name: str) -> Any:
        """A numeric vector as a numpy array (0 when absent, as the generated ``XAsNumpy``)."""
        offset = self._offset(name)
        if offset == 0:
            return 0
        start = self._vector(offset)
        return np.frombuffer(self.data, dtype=_NUMPY[self.fields[name][2]], count=self.length(name), offset=start)

    def child(self, name: str, table_name: str) -> TableView | None:
        offset = self._offset(name)
        if offset == 0:
            return None
        return TableView.of(self.data, self._indirect(offset + self.position), table_name)

    def item(self, name: str, index: int, table_name: str) -> TableView | None:
        """Entry ``index`` of a vector of tables."""
        offset = self._offset(name)
        if offset == 0:
            return None
        return TableView.of(self.data, self._indirect(self._vector(offset) + index * 4), table_name)

    def union(self, name: str) -> int | None:
        """The position of the union value's table (its type is the ``<name>_type`` field)."""
        offset = self._offset(name)
        return None if offset == 0 else self._indirect(offset + self.position)

    def number_fields(self) -> list[tuple[str, str]]:
        """``(name, kind)`` of every scalar / bool / numeric vector field, in schema order."""
        return [(name, field[1]) for name, field in self.fields.items() if field[1] in ("scalar", "bool", "vector")]
