"""Read ONNX external tensor data without ever leaving the model's folder.

The model is parsed with its external references unresolved. For every tensor whose
``data_location`` is ``EXTERNAL`` the ``location`` entry is checked first: an absolute
path, or one that resolves (after following symlinks) outside the model's folder, raises
:class:`~mcudeploy.errors.UnsafePathError` before anything is opened. Only then are
``length`` bytes read from ``offset`` and stored in the tensor's ``raw_data``.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Iterator

import onnx

from ...errors import ModelFormatError, UnsafePathError


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
    target = (folder / location).resolve()
    if not target.is_relative_to(folder):
        raise UnsafePathError(refuse.format(why=f"outside that folder (resolves to {target})"))
    return target


def _read_bytes(model_path: Path, tensor: onnx.TensorProto, target: Path, entries: dict) -> bytes:
    try:
        offset = int(entries.get("offset", 0))
        length = int(entries["length"]) if "length" in entries else -1
    except ValueError:
        raise ModelFormatError(f"{model_path}: tensor {tensor.name!r} has a non-integer external "
                               f"data offset/length {entries}") from None
    if not target.is_file():
        raise ModelFormatError(f"{model_path}: tensor {tensor.name!r} stores its data in "
                               f"{entries['location']!r}, which does not exist")
    with target.open("rb") as stream:
        stream.seek(offset)
        data = stream.read(length)
    if length >= 0 and len(data) != length:
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
