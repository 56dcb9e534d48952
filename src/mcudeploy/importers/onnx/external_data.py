"""Read ONNX external tensor data without ever leaving the model's folder.

The model is parsed with its external references unresolved. For every tensor whose
``data_location`` is ``EXTERNAL`` the ``location`` entry is checked first: an absolute
path, or one that resolves (after following symlinks) outside the model's folder, raises
:class:`~mcudeploy.errors.UnsafePathError` before anything is opened. Only then are
``length`` bytes read from ``offset`` and stored in the tensor's ``raw_data``.
"""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterator

import onnx

from ...errors import ModelFormatError, UnsafePathError, UnsupportedError
from ...limits import check_budget


def _tensors_of_graph(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("sparse_tensor"):
                yield attribute.sparse_tensor.values
                yield attribute.sparse_tensor.indices
            if attribute.HasField("g"):
                yield from _tensors_of_graph(attribute.g)
            for subgraph in attribute.graphs:
                yield from _tensors_of_graph(subgraph)


def _safe_location(model_path: Path, folder: Path, tensor: onnx.TensorProto,
                   location: str) -> Path:
    """The file ``location`` names inside ``folder``, or ``UnsafePathError``."""
    refuse = (f"{model_path}: tensor {tensor.name!r} stores its data in external file {location!r}, which "
              f"is {{why}}; external data must live inside the model's folder {folder}. "
              "Move the data file next to the model and fix the reference.")
    if (not location or PurePosixPath(location).is_absolute()
            or PureWindowsPath(location).is_absolute() or PureWindowsPath(location).drive):
        raise UnsafePathError(refuse.format(why="an absolute path" if location else "empty"))
    if "\x00" in location:
        raise UnsafePathError(refuse.format(why="not a file name (it contains a NUL byte)"))
    try:
        target = (folder / location).resolve()
    except (OSError, RuntimeError, ValueError) as err:   # a symlink loop, a name too long
        raise UnsafePathError(refuse.format(why=f"not a usable path ({err})")) from None
    if not target.is_relative_to(folder):
        raise UnsafePathError(refuse.format(why=f"outside that folder (resolves to {target})"))
    return target


def _offset_and_length(model_path: Path, tensor: onnx.TensorProto, entries: dict,
                       file_size: int) -> tuple[int, int]:
    """The checked ``offset`` and ``length`` entries (``length`` defaults to the rest)."""
    where = f"{model_path}: tensor {tensor.name!r}: external data"
    try:
        offset = int(entries.get("offset", 0))
        if offset > file_size:
            raise ModelFormatError(f"{where}: {entries['location']!r} holds {file_size} bytes; "
                                   f"offset {offset} is beyond its end (truncated?)")
        length = int(entries["length"]) if "length" in entries else file_size - offset
    except ValueError:
        raise ModelFormatError(f"{where} has a non-integer offset / length "
                               f"({entries.get('offset')!r}, {entries.get('length')!r})") from None
    if offset < 0 or length < 0:
        raise ModelFormatError(f"{where} offset {offset} / length {length} must not be negative")
    if offset + length > file_size:
        raise ModelFormatError(f"{where}: {entries['location']!r} holds {file_size} bytes, the "
                               f"tensor needs {length} bytes at offset {offset} (truncated?)")
    check_budget(length, f"{where} ({length} bytes)", UnsupportedError)
    return offset, length


def _read_bytes(model_path: Path, tensor: onnx.TensorProto, target: Path, entries: dict) -> bytes:
    if not target.is_file():
        raise ModelFormatError(f"{model_path}: tensor {tensor.name!r} stores its data in "
                               f"{entries['location']!r}, which does not exist or is not a file")
    try:
        with target.open("rb") as stream:
            offset, length = _offset_and_length(model_path, tensor, entries,
                                                os.fstat(stream.fileno()).st_size)
            stream.seek(offset)
            data = stream.read(length)
    except OSError as err:
        raise ModelFormatError(f"{model_path}: tensor {tensor.name!r}: cannot read external file "
                               f"{entries['location']!r} ({err.strerror or err})") from None
    if len(data) != length:
        raise ModelFormatError(f"{model_path}: tensor {tensor.name!r}: external file "
                               f"{entries['location']!r} holds {len(data)} bytes at offset "
                               f"{offset}, expected {length} (truncated?)")
    return data


def load_external_data(model_path: Path, model: onnx.ModelProto) -> None:
    """Fill every external tensor of ``model`` in place from files beside ``model_path``."""
    folder = model_path.resolve().parent
    for tensor in _tensors_of_graph(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {entry.key: entry.value for entry in tensor.external_data}
        target = _safe_location(model_path, folder, tensor, entries.get("location", ""))
        tensor.raw_data = _read_bytes(model_path, tensor, target, entries)
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
