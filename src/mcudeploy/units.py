"""Byte sizes as users write them, in files and on the command line.

``parse_size`` accepts an integer number of bytes or text with a binary unit: ``"128K"``,
``"128 KiB"``, ``"1M"``, ``"32 MiB"``, ``"1.5M"`` when it is a whole number of bytes
(K = 1024 bytes, M = 1024^2, G = 1024^3). It raises ``ValueError`` with the accepted forms;
callers turn that into an error naming their file, key or option.
"""
from __future__ import annotations

import math
import re
from typing import Any

_SIZE_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024, "M": 1024 ** 2, "MB": 1024 ** 2,
               "MIB": 1024 ** 2, "G": 1024 ** 3, "GB": 1024 ** 3, "GIB": 1024 ** 3}
_SIZE_PATTERN = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,9})?)\s*([A-Za-z]*)\s*$")


MAX_BYTES = 2 ** 64


def parse_size(value: Any) -> int:
    """Bytes from an int or a text like ``"448 KiB"`` (module docstring); at most 2^64 in
    magnitude (a 5,001-digit integer in a file is refused, not carried along)."""
    if isinstance(value, bool):
        raise ValueError("expected a size, got a boolean")
    if isinstance(value, int):
        return _bounded(value)
    if isinstance(value, str):
        match = _SIZE_PATTERN.match(value)
        if match and match.group(2).upper() in _SIZE_UNITS:
            number = float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]
            if math.isfinite(number) and number.is_integer():
                return _bounded(int(number))
    shown = value if not isinstance(value, str) or len(value) <= 40 else value[:40] + "..."
    raise ValueError(f"expected bytes as an integer or text like \"128K\" / \"32 MiB\", got {shown!r}")


def _bounded(number: int) -> int:
    if abs(number) > MAX_BYTES:
        raise ValueError(f"{str(number)[:20]}... is out of range (at most 2**64)" if number.bit_length() > 70
                         else f"{number} is out of range (at most 2**64)")
    return number


def byte_text(count: int) -> str:
    """``1048576 bytes (1024.0 KiB)``."""
    return f"{count} bytes ({count / 1024:.1f} KiB)"
