"""Model input data from files: read without trusting them, matched to a graph's inputs,
checked, shaped as ``N`` samples per input. Used by ``run --inputs``, ``validate --data``,
``generate --test-vectors`` and ``quantize --calib`` alike, so all four accept and refuse
the same files.

Reading (:func:`read_arrays`): ``{key: array}`` (``""`` for a ``.npy``), every array numeric
(bool, integer or float). A data file is checked before numpy allocates anything:

* the first bytes decide the format (``\\x93NUMPY`` -> ``.npy``, ``PK`` -> ``.npz``); an
  empty file, a pickle (never unpickled: ``allow_pickle=False`` everywhere) or anything
  else is a :class:`~mcudeploy.errors.DataError`;
* every array's header (dtype, shape) is read first: object / structured / string dtypes
  are refused, and the bytes the header declares must be present in the file (or in the
  zip member) and fit the memory budget (:mod:`mcudeploy.limits`) summed over the file;
* ``.npz`` members that are encrypted, use a compression other than stored / deflate /
  bzip2 / lzma, are not ``.npy`` arrays, or fail their CRC raise :class:`DataError` naming
  the member.

Matching (:func:`arrays_for_inputs`): a ``.npz`` keyed by input name holds exactly the
model's inputs; a single-input model also takes a ``.npy`` or a one-array ``.npz`` saved
without a name (``arr_0``). Any other key is refused, naming the keys and the inputs.

The sample axis (:func:`check_array`): an input declared with shape ``S`` takes data of
shape ``(N, *S)``; when ``S`` starts with a batch dimension of 1, ``(N, *S[1:])`` is
accepted too, and data of exactly ``S`` is one unbatched sample. Every input must hold the
same ``N > 0``. Dtypes: a float input takes any float data (cast to its dtype); any other
input takes exactly its own dtype (an int8 input takes int8 data: quantize it first). NaN /
Inf are refused.

:func:`npz_bytes` writes arrays as an uncompressed ``.npz`` image in memory, keyed by any
name (``np.savez`` would take a key named ``file`` as its own argument).
"""
from __future__ import annotations

import io
import math
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from .errors import DataError, UsageError
from .ir import Graph, Value
from .ir.layout import image_layout
from .limits import check_budget

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"
PICKLE_MAGIC = b"\x80"
NUMERIC_KINDS = "biuf"
COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
_READ_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, struct.error,
                NotImplementedError, RuntimeError, UnicodeDecodeError, OverflowError,
                SyntaxError, TypeError, KeyError)


def _header(stream: IO[bytes], where: str) -> tuple[np.dtype, tuple[int, ...], bool]:
    """``(dtype, shape, fortran_order)`` of the ``.npy`` array starting at ``stream``."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    except _READ_ERRORS as err:
        raise DataError(f"{where}: not a readable .npy array header ({err})") from None
    if dtype.hasobject or dtype.kind not in NUMERIC_KINDS or dtype.fields is not None:
        raise DataError(f"{where}: holds {dtype} data; give numbers (bool, integer or float) "
                        "(object arrays and pickles are never loaded)")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise DataError(f"{where}: the header declares the impossible shape {list(shape)}")
    return dtype, shape, bool(fortran)


def _array(stream: IO[bytes], available: int, where: str, budget_used: int) -> tuple[np.ndarray, int]:
    """Read one checked array whose header starts at ``stream``; ``available`` is the
    number of bytes from the header on (file or member size)."""
    start = stream.tell()
    dtype, shape, fortran = _header(stream, where)
    nbytes = math.prod(shape) * dtype.itemsize
    check_budget(budget_used + nbytes, f"{where} ({dtype}{list(shape)})", DataError,
                 "use fewer or smaller samples")
    if nbytes > available - (stream.tell() - start):
        raise DataError(f"{where}: the header declares {dtype}{list(shape)} ({nbytes:,} bytes) but "
                        f"the file holds {max(available - (stream.tell() - start), 0):,} bytes of "
                        "data (truncated?)")
    data = stream.read(nbytes)
    if len(data) != nbytes:
        raise DataError(f"{where}: truncated: {len(data):,} of {nbytes:,} data bytes")
    array = np.frombuffer(data, dtype=dtype)
    array = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    return array.copy(), budget_used + nbytes


def _members(archive: zipfile.ZipFile, where: str) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    used = 0
    for info in archive.infolist():
        member = f"{where}: member {info.filename!r}"
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            raise DataError(f"{member} is encrypted; give an unencrypted .npz (np.savez)")
        if info.compress_type not in COMPRESSIONS:
            raise DataError(f"{member} uses zip compression method {info.compress_type}, which "
                            "cannot be read; write the file with np.savez / np.savez_compressed")
        if not info.filename.endswith(".npy"):
            raise DataError(f"{member} is not a .npy array; an .npz holds arrays only")
        check_budget(used + info.file_size, member, DataError, "use fewer or smaller samples")
        with archive.open(info) as stream:
            array, used = _array(stream, info.file_size, member, used)
            while stream.read(1 << 20):    # to the end: zipfile checks the CRC there
                pass
        arrays[info.filename[:-4]] = array
    return arrays


def read_arrays(path: str | Path, what: str = "data file") -> dict[str, np.ndarray]:
    """The checked arrays of a ``.npy`` (key ``""``) or ``.npz`` file (module docstring)."""
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such {what}")
    if not path.is_file():
        raise UsageError(f"{path}: the {what} is not a regular file (a folder, a device or a pipe); give a "
                         ".npy or .npz file")
    try:
        with path.open("rb") as stream:
            head = stream.read(len(NPY_MAGIC))
            size = path.stat().st_size
            if not head:
                raise DataError(f"{path}: the {what} is empty; give a .npy or .npz file")
            if head.startswith(NPY_MAGIC):
                stream.seek(0)
                return {"": _array(stream, size, str(path), 0)[0]}
            if head.startswith(ZIP_MAGIC):
                with zipfile.ZipFile(stream) as archive:
                    return _members(archive, str(path))
    except DataError:
        raise
    except _READ_ERRORS as err:
        raise DataError(f"{path}: not a readable .npy / .npz file ({type(err).__name__}: {err})") from None
    kind = "a Python pickle (never loaded)" if head.startswith(PICKLE_MAGIC) else "neither .npy nor .npz"
    raise DataError(f"{path}: not a readable .npy / .npz file: the {what} is {kind}; save it with "
                    "numpy.save / numpy.savez")


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` image of ``arrays`` (what ``np.savez`` writes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


@dataclass
class Samples:
    """``arrays``: input name -> ``(N, *declared_shape)``; ``batched`` is False when every
    array was given with exactly the declared shape (one sample, no sample axis)."""
    arrays: dict[str, np.ndarray]
    batched: bool
    source: str

    @property
    def count(self) -> int:
        return next(iter(self.arrays.values())).shape[0] if self.arrays else 1

    def head(self, count: int) -> "Samples":
        """The first ``count`` samples."""
        return Samples({k: v[:count] for k, v in self.arrays.items()}, True, self.source)


UNNAMED_KEY = "arr_0"        # numpy.savez(path, array): the one array saved without a name


def arrays_for_inputs(path: str | Path, graph: Graph, what: str = "data file") -> dict[str, np.ndarray]:
    """The arrays of ``path`` by input name: a ``.npz`` keyed by input name (exactly the
    model's inputs), or one array (``.npy``, or a one-array ``.npz`` saved without a name,
    key ``arr_0``) for a single-input model. A one-array ``.npz`` under another name is
    refused, naming the key: it may be data for another model."""
    path = Path(path)
    names = [value.name for value in graph.inputs]
    arrays = read_arrays(path, what)
    if len(arrays) == 1 and ("" in arrays or (len(names) == 1 and set(arrays) <= {names[0], UNNAMED_KEY})):
        if len(names) != 1:
            raise DataError(f"{path}: one array for a model with {len(names)} inputs "
                            f"({', '.join(names)}); give a .npz keyed by input name")
        return {names[0]: next(iter(arrays.values()))}
    missing, unknown = sorted(set(names) - set(arrays)), sorted(set(arrays) - set(names))
    if missing or unknown:
        lacking = f"no data for input(s) {', '.join(missing)}: " if missing else ""
        raise DataError(f"{path}: {lacking}arrays {', '.join(sorted(arrays))} do not match the model "
                        f"inputs {', '.join(names)} (missing: {', '.join(missing) or '-'}; unknown: "
                        f"{', '.join(unknown) or '-'}); key the .npz by input name")
    return arrays


_CHANNEL_MOVES = {"NCHW": ((0, 2, 3, 1), "NHWC", (0, 3, 1, 2)), "NHWC": ((0, 3, 1, 2), "NCHW", (0, 2, 3, 1))}


def layout_mismatch(data_shape: tuple[int, ...], value: Value) -> tuple[str, tuple[int, ...]] | None:
    """``(data layout, transpose that fixes it)`` when ``data_shape`` (``[N, ...]``, rank 4) is
    the shape of the image input ``value`` with the channel axis moved (NHWC data for an NCHW
    input or the other way); else ``None``."""
    layout = image_layout(value)
    if layout not in _CHANNEL_MOVES:
        return None
    to_data, other, fix = _CHANNEL_MOVES[layout]
    moved = tuple(value.shape[i] for i in to_data)
    if moved == value.shape:   # e.g. 1x1x1x1: nothing to tell apart
        return None
    if len(data_shape) == 4 and tuple(data_shape[1:]) == moved[1:]:
        return other, fix
    return None


def _shaped(array: np.ndarray, value: Value, origin: str) -> tuple[np.ndarray, bool]:
    """``(N, *shape)`` view of ``array`` and whether it had a sample axis."""
    shape = value.shape
    if array.shape == shape:
        return array[None], False
    if array.ndim == len(shape) + 1 and array.shape[1:] == shape:
        return array, True
    if shape and shape[0] == 1 and array.ndim == len(shape) and array.shape[1:] == shape[1:]:
        return array[:, None], True
    accepted = f"[N,{','.join(map(str, shape))}]" + (
        f" or [N,{','.join(map(str, shape[1:]))}]" if shape and shape[0] == 1 else "")
    moved = layout_mismatch(tuple(array.shape), value)
    hint = (f": this looks like {moved[0]} data for an {image_layout(value)} input; transpose it "
            f"(np.transpose(x, {moved[1]}) for [N,...] data); see mcudeploy data check") if moved else ""
    raise DataError(f"{origin}: data for input {value.name!r} has shape {list(array.shape)}; "
                    f"expected {list(shape)} (one sample) or {accepted} (N samples){hint}")


def check_array(array: np.ndarray, value: Value, origin: str) -> tuple[np.ndarray, bool]:
    """Dtype, shape and finiteness check of one input's data -> ``(N, *shape)``, batched."""
    array = np.asarray(array)
    if value.dtype.is_float and array.dtype.kind == "f":
        array = array.astype(value.dtype.numpy, copy=False)
    elif array.dtype != value.dtype.numpy:
        hint = ("quantize the data with the input's scale and zero point first"
                if value.quant is not None else f"convert it to {value.dtype}")
        raise DataError(f"{origin}: data for input {value.name!r} is {array.dtype}, the input is "
                        f"{value.type_str()}; {hint}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        bad = int(array.size - np.isfinite(array).sum())
        raise DataError(f"{origin}: data for input {value.name!r} has {bad} NaN / Inf value(s) "
                        f"of {array.size}; clean the data (no NaN or Inf)")
    return _shaped(array, value, origin)


def check_arrays(graph: Graph, arrays: dict[str, np.ndarray], origin: str) -> Samples:
    """Check every input's data and that all inputs hold the same number of samples."""
    shaped, batched = {}, []
    for value in graph.inputs:
        shaped[value.name], has_axis = check_array(arrays[value.name], value, origin)
        batched.append(has_axis)
    counts = {name: array.shape[0] for name, array in shaped.items()}
    if len(set(counts.values())) > 1:
        raise DataError(f"{origin}: inputs hold different sample counts {counts}; give every "
                        "input the same number of samples")
    if any(count == 0 for count in counts.values()):
        raise DataError(f"{origin}: the data holds no sample")
    return Samples(shaped, any(batched), origin)
