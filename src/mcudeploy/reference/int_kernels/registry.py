"""The integer kernel registry: IR op name -> (prepare, eval), as TFLite Micro splits them.

* ``prepare(node) -> params``: everything derived from the node's quantization parameters
  and attributes (multipliers, shifts, offsets, activation clamps in the quantized domain,
  lookup tables), as a frozen dataclass of plain ints and int arrays. These are exactly
  the numbers the C code generator emits; :func:`prepare_node` is its entry point.
  Unsupported dtype / quantization combinations raise :class:`UnsupportedError` here,
  before anything runs.
* ``eval(node, params, inputs) -> outputs``: the arithmetic. Every array carries one
  leading batch axis ``B`` in front of the value's declared shape (constants arrive with
  ``B = 1`` and broadcast); outputs have shape ``(B,) + value.shape`` and the value's dtype.

Register with ``@int_kernel("Conv", prepare=prepare_conv)`` on the eval function, and name
the op's module in :data:`MODULE_OF`: looking up one op imports only its module (a plan
prepares the parameters of a few op families, not of all of them); the table is checked
against the registrations in tests/test_int_kernel_modules.py.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ...errors import UnsupportedError
from ...ir import Node

Prepare = Callable[[Node], Any]
Eval = Callable[[Node, Any, list[Optional[np.ndarray]]], list[np.ndarray]]


@dataclass(frozen=True)
class IntKernel:
    """The prepare and eval functions of one op's integer kernel."""
    op: str
    prepare: Prepare
    eval: Eval


_KERNELS: dict[str, IntKernel] = {}


def no_params(node: Node) -> None:
    """Prepare step of ops without parameters (pure data movement)."""
    return None


def _guarded(prepare: Prepare) -> Prepare:
    """``prepare`` whose arithmetic failures on extreme (but valid) quantization parameters
    (a multiplier no 32-bit fixed-point pair represents, a shift out of range) become an
    :class:`UnsupportedError` naming the node, like every other limit of a kernel."""
    @functools.wraps(prepare)
    def checked(node: Node) -> Any:
        try:
            return prepare(node)
        except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError) as err:
            raise UnsupportedError(f"node {node.name!r} ({node.op}): its quantization parameters "
                                   f"are outside what the integer kernel supports ({err})") from None
    return checked


def int_kernel(op_name: str, *, prepare: Prepare = no_params) -> Callable[[Eval], Eval]:
    """Register the decorated function as the integer eval of ``op_name``, with ``prepare``."""
    def decorate(function: Eval) -> Eval:
        if op_name in _KERNELS:
            raise RuntimeError(f"integer kernel for {op_name} registered twice")
        _KERNELS[op_name] = IntKernel(op_name, _guarded(prepare), function)
        return function
    return decorate


def get_int_kernel(op_name: str) -> IntKernel:
    """The integer kernel of ``op_name``; ``UnsupportedError`` when there is none."""
    if op_name not in _KERNELS and op_name in MODULE_OF:
        importlib.import_module(f"{__package__}.{MODULE_OF[op_name]}")
    if op_name not in _KERNELS:
        _load()
    try:
        return _KERNELS[op_name]
    except KeyError:
        raise UnsupportedError(f"the integer reference has no kernel for op {op_name!r}; it "
                               f"implements {', '.join(sorted(_KERNELS))}") from None


def prepare_node(node: Node) -> Any:
    """The prepared parameters of ``node`` (what the C code generator emits for it)."""
    return get_int_kernel(node.op).prepare(node)


def all_int_kernels() -> dict[str, IntKernel]:
    _load()
    return dict(_KERNELS)


# op -> the module of this package that registers it
MODULE_OF = {
    "HardSwish": "activation", "LeakyRelu": "activation", "Sigmoid": "activation", "Tanh": "activation",
    "Max": "binary_math", "Min": "binary_math", "SquaredDifference": "binary_math",
    "Conv": "conv", "ConvTranspose": "conv", "ConvAccumulate": "accumulate", "RequantizeAccumulator": "accumulate",
    "Add": "elementwise", "Mul": "elementwise", "Sub": "elementwise",
    "Expand": "gather", "Gather": "gather", "Tile": "gather",
    "LogSoftmax": "log_softmax", "Gemm": "matmul",
    "AveragePool": "pool", "MaxPool": "pool", "ReduceMean": "pool", "ReduceSum": "reduce",
    "DequantizeLinear": "quant", "QuantizeLinear": "quant",
    "ArgMax": "reduce", "ArgMin": "reduce", "ReduceMax": "reduce", "ReduceMin": "reduce",
    "Resize": "resize",
    "Concat": "shape", "Dropout": "shape", "Flatten": "shape", "Identity": "shape", "Pad": "shape",
    "Reshape": "shape", "Slice": "shape", "Squeeze": "shape", "Transpose": "shape", "Unsqueeze": "shape",
    "Softmax": "softmax", "Abs": "unary_math", "Rsqrt": "unary_math",
}


def _load() -> None:
    from . import (  # noqa: F401
        accumulate,
        activation,
        binary_math,
        conv,
        elementwise,
        gather,
        log_softmax,
        matmul,
        pool,
        quant,
        reduce,
        resize,
        shape,
        softmax,
        unary_math,
    )
