"""The float kernel registry: IR op name -> numpy kernel.

A kernel is ``kernel(node, inputs) -> outputs``: ``inputs`` holds one array per node input
(``None`` for an omitted optional input), the result one array per node output. Kernels
never modify their inputs. Register with ``@kernel("Conv")``; adding an op touches one
module of this package.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ...errors import UnsupportedError
from ...ir import Node

Kernel = Callable[[Node, list[Optional[np.ndarray]]], list[np.ndarray]]

_KERNELS: dict[str, Kernel] = {}


def kernel(op_name: str) -> Callable[[Kernel], Kernel]:
    """Register the decorated function as the float kernel of IR op ``op_name``."""
    def decorate(function: Kernel) -> Kernel:
        if op_name in _KERNELS:
            raise RuntimeError(f"float kernel for {op_name} registered twice")
        _KERNELS[op_name] = function
        return function
    return decorate


def get_kernel(op_name: str) -> Kernel:
    """The float kernel of ``op_name``; ``UnsupportedError`` when there is none."""
    _load()
    try:
        return _KERNELS[op_name]
    except KeyError:
        raise UnsupportedError(f"the float reference has no kernel for op {op_name!r}; "
                               f"it implements {', '.join(sorted(_KERNELS))}") from None


def all_kernels() -> dict[str, Kernel]:
    """Every registered kernel, by op name."""
    _load()
    return dict(_KERNELS)


def _load() -> None:
    from . import (  # noqa: F401
        accumulate,
        activation,
        attention,
        binary_math,
        conv,
        elementwise,
        gather,
        loss,
        matmul,
        normalization,
        pool,
        quant,
        reduce,
        resize,
        shape,
        tile,
        unary_math,
    )
