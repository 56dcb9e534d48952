"""Model importers: the only code that imports ``onnx``, ``tflite`` or ``h5py``.

:func:`load_model` detects the format from the file's bytes (not only its extension: the
TFLite identifier, the HDF5 signature of a Keras ``.h5``, a zip holding ``config.json`` for
a ``.keras``, an ONNX protobuf) and
hands the file to the matching importer, which returns a verified :class:`~mcudeploy.ir.Graph`
with ``metadata`` keys ``format``, ``path``, ``sha256`` (and format-specific ones).
"""
from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Callable

from ..errors import GraphError, ModelFormatError, UnsupportedError, UsageError
from ..ir import Graph
from ..limits import check_budget, memory_budget
from ..safe_io import check_path_name
from ..text_inputs import read_bytes

InputShapes = dict[str, tuple[int, ...]]
MAX_DIMENSION = 2 ** 31 - 1
MAX_DIMENSION_DIGITS = 10
MAX_RANK = 8


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
ZIP_SIGNATURE = b"PK\x03\x04"
KERAS_SUFFIXES = (".h5", ".hdf5", ".keras")


def detect_format(path: Path, head: bytes, data: bytes = b"") -> str:
    """``"onnx"``, ``"tflite"`` or ``"keras"`` from the first bytes (``data``: the whole
    file, to look inside a zip); ``ModelFormatError`` otherwise."""
    if not head:
        raise ModelFormatError(f"{path}: the file is empty; expected an ONNX (.onnx), TFLite "
                               "(.tflite) or Keras (.h5, .keras) model")
    if len(head) >= 8 and head[4:8] == b"TFL3":
        return "tflite"
    if head.startswith(HDF5_SIGNATURE) or (head.startswith(ZIP_SIGNATURE) and _zip_has_config(data or head)):
        return "keras"
    suffix = path.suffix.lower()
    if suffix in KERAS_SUFFIXES:
        what = "a .keras zip with config.json" if suffix == ".keras" else "an HDF5 file"
        raise ModelFormatError(f"{path}: not {what} (the file starts with {head[:8]!r}); is it "
                               "truncated or another format? Save the model again with model.save()")
    if suffix == ".tflite":
        ident = head[4:8] if len(head) >= 8 else head
        raise ModelFormatError(f"{path}: not a TFLite flatbuffer: file identifier is {ident!r}, "
                               "expected b'TFL3' (is the file truncated or another format?)")
    if suffix == ".onnx" or head[:1] == b"\x08":  # ONNX ModelProto starts with field 1 (ir_version)
        return "onnx"
    raise ModelFormatError(f"{path}: unrecognised model format (neither an ONNX protobuf, a "
                           "TFLite flatbuffer nor a Keras .h5 / .keras file); give a .onnx, "
                           ".tflite, .h5 or .keras file")


def _zip_has_config(data: bytes) -> bool:
    """Whether ``data`` is a zip archive with a ``config.json`` (a Keras 3 ``.keras`` file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "config.json" in archive.namelist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, RuntimeError, NotImplementedError):
        return False


def _importer(fmt: str) -> Callable[..., Graph]:
    """The importer of ``fmt``, imported on first use: each loads its own format library
    (``onnx`` takes a third of a second to import; a TFLite model does not need it)."""
    if fmt == "onnx":
        from .onnx_importer import import_onnx
        return import_onnx
    if fmt == "keras":
        from .keras_importer import import_keras
        return import_keras
    from .tflite_importer import import_tflite
    return import_tflite


def load_model(path: str | Path, *, input_shapes: InputShapes | None = None) -> Graph:
    """Read the model at ``path`` into a verified IR graph.

    ``input_shapes`` overrides the shape of named inputs (needed for dynamic dimensions,
    like ``--input-shape NAME=1,3,224,224`` on the command line).
    """
    path = check_path_name(path, "model")   # a NUL, a name too long: one line, not an OSError
    try:
        found = path.exists()
    except OSError as error:   # a symlink loop, a permission problem on the way
        raise UsageError(f"{path}: cannot reach the model file ({error.strerror})") from None
    if not found:
        raise UsageError(f"{path}: no such model file")
    # a FIFO, a device, a folder or an unreadable /proc file (/proc/self/mem) is one error line
    data = read_bytes(path, "model file", limit=memory_budget())
    fmt = detect_format(path, data[:16], data)
    graph = _importer(fmt)(path, data, input_shapes=input_shapes or {})
    check_boundary(path, graph)
    graph.metadata.setdefault("format", fmt)
    graph.metadata["path"] = str(path)
    graph.metadata["sha256"] = hashlib.sha256(data).hexdigest()
    graph.metadata["file_bytes"] = len(data)
    return graph


def check_boundary(path: Path, graph: Graph) -> None:
    """What every later stage assumes of an imported graph, whatever the format: at least
    one input and one output, no output that is a constant, every tensor within the memory
    budget (:mod:`mcudeploy.limits`)."""
    if not graph.inputs:
        raise UnsupportedError(f"{path}: the model has no inputs (everything in it is "
                               "constant); there is nothing to run on a device")
    if not graph.outputs:
        raise GraphError(f"{path}: the model declares no outputs")
    for value in graph.outputs:
        if value.is_constant:
            raise UnsupportedError(f"{path}: graph output {value.name!r} is a constant (an "
                                   "initializer), not computed from the inputs; remove it from "
                                   "the outputs")
    for value in graph.values():
        check_budget(value.nbytes, f"{path}: tensor {value.name!r} ({value.type_str()})",
                     UnsupportedError, "mcudeploy deploys models for microcontrollers")


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse ``NAME=1,3,224,224`` (the ``--input-shape`` option)."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(",") if len(d.strip()) <= MAX_DIMENSION_DIGITS)
        if len(shape) != len(dims.split(",")) or len(shape) > MAX_RANK:
            shape = ()
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(not 0 < d <= MAX_DIMENSION for d in shape):
        raise UsageError(f"--input-shape {text!r}: expected NAME=D1,D2,... with at most "
                         f"{MAX_RANK} integers from 1 to {MAX_DIMENSION}, e.g. input=1,3,224,224")
    return name, shape
