"""C99 literals for numbers and arrays, exactly as the values are (no rounding).

Integers that equal the type's minimum are written as ``(-MAX - 1)`` (a bare ``-2147483648``
is an unsigned or long constant in C); 64-bit values use ``INT64_C``; float32 values are
hexadecimal float literals (``0x1.8p-3f``), which C99 reads back bit for bit.
"""
from __future__ import annotations

import numpy as np

C_TYPES = {np.dtype(np.int8): "int8_t", np.dtype(np.uint8): "uint8_t", np.dtype(np.int16): "int16_t",
           np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t", np.dtype(np.float32): "float"}
VALUES_PER_LINE = 16


def c_type(dtype: np.dtype) -> str:
    """The ``<stdint.h>`` type of a numpy dtype (``int8_t``, ``float``, ...)."""
    try:
        return C_TYPES[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"no C type for numpy dtype {dtype}") from None


def c_int(value: int, bits: int = 32) -> str:
    """``value`` as a C integer constant of a signed ``bits``-wide type."""
    value = int(value)
    low = -(1 << (bits - 1))
    if not low <= value < -low:
        raise ValueError(f"{value} does not fit in int{bits}_t")
    if bits == 64:
        return f"(INT64_C({value + 1}) - 1)" if value == low else f"INT64_C({value})"
    return f"({value + 1} - 1)" if value == low else str(value)


def c_float(value: float) -> str:
    """A float32 as a hexadecimal C literal (exact)."""
    number = float(np.float32(value))
    if not np.isfinite(number):
        raise ValueError(f"cannot write the non-finite float {number} as a C constant")
    return f"{number.hex()}f" if number != 0 else "0.0f"


def c_scalar(value, dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return c_float(value)
    if dtype.kind == "u":
        return f"{int(value)}u"
    return c_int(value, dtype.itemsize * 8)


def c_array_body(values: np.ndarray) -> str:
    """The comma-separated elements of ``values`` (flattened), 16 per line, indented."""
    flat = np.asarray(values).reshape(-1)
    items = [c_scalar(v, flat.dtype) for v in flat.tolist()] or ["0"]
    lines = [", ".join(items[i:i + VALUES_PER_LINE]) for i in range(0, len(items), VALUES_PER_LINE)]
    return "    " + ",\n    ".join(lines)
