"""Element types of IR values, and their numpy equivalents.

The IR knows exactly eight dtypes. Quantized tensors are ``INT8`` / ``UINT8`` / ``INT16``
values that carry :class:`~mcudeploy.ir.quant.QuantParams`; there is no separate
"quantized" dtype.
"""
from __future__ import annotations

import enum

import numpy as np


class DType(str, enum.Enum):
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    BOOL = "bool"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype with the same bit layout."""
        return np.dtype(self.value)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self in (DType.FLOAT32, DType.FLOAT16)

    @property
    def is_integer(self) -> bool:
        return self in (DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT64)

    @classmethod
    def from_numpy(cls, dtype: np.dtype | type) -> "DType":
        """The IR dtype for a numpy dtype; raises ``ValueError`` for one the IR does not hold."""
        name = np.dtype(dtype).name
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"numpy dtype {name!r} has no IR equivalent "
                             f"(supported: {', '.join(d.value for d in cls)})") from None

    def __str__(self) -> str:  # "float32", not "DType.FLOAT32", in dumps and messages
        return self.value
