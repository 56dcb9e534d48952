"""TFLite tensor records -> IR types: element types, quantization parameters, constants.

Quantization is kept exactly as stored: ``scale`` float32, ``zero_point`` int64 (an absent
zero point means 0), ``quantized_dimension`` becomes ``QuantParams.axis`` for per-channel
tensors (more than one scale) and ``None`` for per-tensor ones. Constants are decoded from
their buffer as little-endian arrays of the stored dtype and shape; a buffer whose size does
not match ``prod(shape) * itemsize`` is a corrupt file.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...errors import ModelFormatError, UnsupportedError
from ...ir import DType, QuantParams
from .reader import ModelRecord, TensorRecord
from .schema_tables import TensorType as FlatbufferType

DTYPES: dict[int, DType] = {
    FlatbufferType.FLOAT32: DType.FLOAT32, FlatbufferType.FLOAT16: DType.FLOAT16,
    FlatbufferType.INT32: DType.INT32, FlatbufferType.UINT8: DType.UINT8,
    FlatbufferType.INT64: DType.INT64, FlatbufferType.BOOL: DType.BOOL,
    FlatbufferType.INT16: DType.INT16, FlatbufferType.INT8: DType.INT8,
}
TYPE_NAMES = {code: name for name, code in vars(FlatbufferType).items() if not name.startswith("_")}
MAX_RANK = 8


def tensor_label(tensor: TensorRecord) -> str:
    return f"tensor {tensor.index} ({tensor.name!r})" if tensor.name else f"tensor {tensor.index}"


def ir_dtype(path: Path, tensor: TensorRecord) -> DType:
    """The IR dtype of ``tensor``; ``UnsupportedError`` for STRING, INT4, FLOAT64, ..."""
    try:
        return DTYPES[tensor.type_code]
    except KeyError:
        name = TYPE_NAMES.get(tensor.type_code, f"type code {tensor.type_code}")
        raise UnsupportedError(
            f"{path}: {tensor_label(tensor)} has element type {name}, which mcudeploy does not "
            f"support (supported: {', '.join(TYPE_NAMES[c] for c in DTYPES)})") from None


def quant_params(path: Path, tensor: TensorRecord) -> QuantParams | None:
    """The tensor's quantization as :class:`QuantParams` (exact stored values), or ``None``."""
    record = tensor.quant
    if record is None:
        return None
    scale = record.scale
    zero_point = record.zero_point if record.zero_point.size else np.zeros(scale.shape, np.int64)
    if zero_point.size not in (1, scale.size):
        raise ModelFormatError(f"{path}: {tensor_label(tensor)} has {scale.size} scales but "
                               f"{zero_point.size} zero points (truncated or corrupt file)")
    if scale.size == 1:
        return QuantParams(scale, zero_point[:1], None)
    axis = record.quantized_dimension
    if len(tensor.shape) == 1 and tensor.shape[0] == scale.size and axis != 0:
        # Old (TOCO) converters store the weights' axis (3) on rank-1 bias tensors; the
        # only axis a vector has is 0, which is what TFLite's kernels use.
        axis = 0
    if not 0 <= axis < len(tensor.shape) or tensor.shape[axis] != scale.size:
        raise ModelFormatError(f"{path}: {tensor_label(tensor)} has {scale.size} per-channel "
                               f"scales on dimension {axis}, but its shape is {list(tensor.shape)}")
    return QuantParams(scale, zero_point, axis)


def check_shape(path: Path, tensor: TensorRecord) -> None:
    """Rank and dimension sanity (``-1`` is allowed only through ``shape_signature``)."""
    if len(tensor.shape) > MAX_RANK or any(d < -1 or d > 2**31 - 1 for d in tensor.shape):
        raise ModelFormatError(f"{path}: {tensor_label(tensor)} has an impossible shape "
                               f"{list(tensor.shape)} (truncated or corrupt file)")


def constant_array(path: Path, model: ModelRecord, tensor: TensorRecord) -> np.ndarray | None:
    """The constant data of ``tensor`` (a new array of the stored dtype and shape), or
    ``None`` when the tensor has no data (an activation)."""
    raw = model.buffers.get(tensor.buffer)
    if not raw:
        return None
    dtype = ir_dtype(path, tensor).numpy
    count = math.prod(tensor.shape)
    if any(d < 0 for d in tensor.shape) or count * dtype.itemsize != len(raw):
        raise ModelFormatError(f"{path}: {tensor_label(tensor)} is {TYPE_NAMES[tensor.type_code]}"
                               f"{list(tensor.shape)} ({count * dtype.itemsize} bytes) but its "
                               f"buffer {tensor.buffer} holds {len(raw)} bytes (corrupt file)")
    array = np.frombuffer(raw, dtype=dtype.newbyteorder("<"), count=count)
    return array.astype(dtype).reshape(tensor.shape)
