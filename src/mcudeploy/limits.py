"""The memory budget: the most bytes one tensor, one folded constant or one data file may
take before mcudeploy refuses to build it.

A model or data file can declare sizes it does not hold (a ``1e12``-element ``.npy`` header,
an ONNX ``Expand`` / ``Tile`` / ``ConstantOfShape`` / ``Range`` folding to terabytes, an
``--input-shape`` with a 20-digit dimension). Such a size is checked *before* anything is
allocated, and refused with an error naming the tensor, the bytes it needs and the budget,
instead of ending in ``MemoryError`` or the kernel's out-of-memory killer.

The budget is :data:`DEFAULT_MEMORY_BUDGET` (1 GiB: far above any model a microcontroller
runs); set the environment variable ``MCUDEPLOY_MEMORY_BUDGET`` (bytes, or ``"4G"``,
``"512M"``) to change it.
"""
from __future__ import annotations

import os

from .errors import McuDeployError, UsageError
from .units import parse_size

DEFAULT_MEMORY_BUDGET = 1 << 30
BUDGET_VARIABLE = "MCUDEPLOY_MEMORY_BUDGET"


def memory_budget() -> int:
    """The budget in bytes (:data:`BUDGET_VARIABLE` if set, else the default)."""
    text = os.environ.get(BUDGET_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MEMORY_BUDGET
    try:
        budget = parse_size(text)
    except ValueError as err:
        raise UsageError(f"{BUDGET_VARIABLE}={text!r}: {err}") from None
    if budget <= 0:
        raise UsageError(f"{BUDGET_VARIABLE}={text!r}: give a positive size, e.g. 4G")
    return budget


def check_budget(nbytes: int, what: str, error: type[McuDeployError], hint: str = "") -> None:
    """Raise ``error`` when ``nbytes`` (an exact Python int) exceeds the budget; ``what``
    names the tensor or file, ``hint`` says what to do instead."""
    budget = memory_budget()
    if nbytes > budget:
        raise error(f"{what} needs {nbytes:,} bytes, more than the memory budget of "
                    f"{budget:,} bytes{'; ' + hint if hint else ''} (the budget is set by "
                    f"{BUDGET_VARIABLE}, e.g. {BUDGET_VARIABLE}=4G)")
