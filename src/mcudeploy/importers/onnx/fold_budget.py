"""How many elements folding a node at import time would create, known before it runs.

Constant folding (:mod:`.folding`) runs ONNX's reference evaluator on constant inputs. A few
ops make outputs whose size is set by the *values* of their inputs, not their sizes, so a
file of a few bytes can ask for terabytes (``ConstantOfShape([10**6, 10**6])``)::

    ConstantOfShape(shape)        prod(shape)
    Expand(x, shape)              prod(broadcast(x.shape, shape))
    Tile(x, repeats)              prod(x.shape[i] * repeats[i])
    Range(start, limit, delta)    max(ceil((limit - start) / delta), 0)
    Pad(x, pads)                  prod(x.shape[i] + pads[i] + pads[i + rank])
    Resize / Upsample(x, scales)  prod(floor(x.shape[i] * scales[i]))  (or prod(sizes))
    OneHot(indices, depth)        size(indices) * depth
    EyeLike / others              the largest output shape ONNX shape inference found,
                                  else the broadcast of the input shapes or the largest
                                  input (elementwise ops, MatMul's outer products)

:func:`check_fold_size` refuses (``UnsupportedError`` naming the node, the elements and the
bytes) any fold over the memory budget (:mod:`mcudeploy.limits`), before the evaluator
allocates anything. Every count is an exact Python integer (no overflow); a negative or
non-finite request counts as unbounded.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import onnx

from ...errors import UnsupportedError
from ...limits import check_budget
from .context import ConversionContext

WORST_ITEMSIZE = 8   # int64 / double: the widest element a fold can produce
MAX_RANK = 64        # numpy's limit; a longer shape / repeats / pads vector is not a size
INVALID = -1         # an estimate from negative or non-finite sizes
Estimate = Callable[[ConversionContext, onnx.NodeProto], int | None]


def _values(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> list[float] | None:
    if index >= len(node.input) or not node.input[index]:
        return None
    array = ctx.constant(node.input[index])
    if array is None or np.asarray(array).size > MAX_RANK or np.asarray(array).dtype.kind not in "biuf":
        return None
    return [float(v) for v in np.asarray(array).reshape(-1)]


def _shape(ctx: ConversionContext, node: onnx.NodeProto, index: int) -> tuple[int, ...]:
    name = node.input[index] if index < len(node.input) else ""
    return ctx.shape_of(name) if name and ctx.is_known(name) else ()


def _product(numbers: list[float]) -> int:
    if any(not math.isfinite(n) or n < 0 for n in numbers):
        return INVALID
    return math.prod(int(n) for n in numbers)


def _broadcast(first: tuple, second: list[float]) -> list[float]:
    rank = max(len(first), len(second))
    first = (1,) * (rank - len(first)) + tuple(first)
    second = [1.0] * (rank - len(second)) + list(second)
    return [max(float(a), b) for a, b in zip(first, second)]


def _constant_of_shape(ctx, node):
    shape = _values(ctx, node, 0)
    return None if shape is None else _product(shape)


def _expand(ctx, node):
    shape = _values(ctx, node, 1)
    return None if shape is None else _product(_broadcast(_shape(ctx, node, 0), shape))


def _tile(ctx, node):
    repeats = _values(ctx, node, 1)
    if repeats is None:
        return None
    shape = list(_shape(ctx, node, 0))
    rank = max(len(shape), len(repeats))   # numpy.tile (the evaluator) pads either with 1s
    shape, repeats = [1] * (rank - len(shape)) + shape, [1.0] * (rank - len(repeats)) + repeats
    return _product([float(d) * r for d, r in zip(shape, repeats)])


def _range(ctx, node):
    start, limit, delta = (_values(ctx, node, i) for i in range(3))
    if not (start and limit and delta):
        return None
    if delta[0] == 0 or not all(math.isfinite(v[0]) for v in (start, limit, delta)):
        return INVALID
    return max(math.ceil((limit[0] - start[0]) / delta[0]), 0)


def _pad(ctx, node):
    pads = _values(ctx, node, 1) if len(node.input) > 1 else None
    if pads is None:
        pads = [float(v) for a in node.attribute if a.name in ("pads", "paddings") for v in a.ints]
    shape = _shape(ctx, node, 0)
    if len(pads) != 2 * len(shape):
        return None
    return _product([d + pads[i] + pads[i + len(shape)] for i, d in enumerate(shape)])


def _resize(ctx, node):
    shape = _shape(ctx, node, 0)
    sizes = _values(ctx, node, 3)
    if sizes:
        return _product(sizes)
    scales = _values(ctx, node, 2 if node.op_type == "Resize" else 1)
    if not scales or len(scales) != len(shape):
        return None
    return _product([math.floor(d * s) if math.isfinite(d * s) and s > 0 else -1.0
                     for d, s in zip(shape, scales)])


def _one_hot(ctx, node):
    depth = _values(ctx, node, 1)
    return None if not depth else _product([float(math.prod(_shape(ctx, node, 0))), depth[0]])


ESTIMATES: dict[str, Estimate] = {
    "ConstantOfShape": _constant_of_shape, "Expand": _expand, "Tile": _tile, "Range": _range,
    "Pad": _pad, "Resize": _resize, "Upsample": _resize, "OneHot": _one_hot,
}


def output_elements(ctx: ConversionContext, node: onnx.NodeProto,
                    inferred: dict[str, tuple[int, ...]]) -> int | None:
    """Elements of the largest output of folding ``node`` (module docstring); ``None`` when
    a value-dependent op asks for a negative or non-finite size."""
    estimate = ESTIMATES.get(node.op_type)
    elements = estimate(ctx, node) if estimate is not None else None
    if elements is not None:
        return None if elements == INVALID else elements
    known = [math.prod(inferred[name]) for name in node.output if name in inferred]
    if known:
        return max(known)
    shapes = [ctx.shape_of(name) for name in node.input if name and ctx.is_known(name)]
    rank = max((len(shape) for shape in shapes), default=0)
    broadcast = [max((shape[len(shape) - rank + axis] if len(shape) - rank + axis >= 0 else 1)
                     for shape in shapes) for axis in range(rank)]
    return max([math.prod(broadcast)] + [math.prod(shape) for shape in shapes])


def check_fold_size(ctx: ConversionContext, node: onnx.NodeProto,
                    inferred: dict[str, tuple[int, ...]]) -> None:
    """Refuse a fold whose output would exceed the memory budget (before it runs)."""
    elements = output_elements(ctx, node, inferred)
    where = f"{ctx.path}: node {node.name!r} ({node.op_type})"
    if elements is None:
        raise UnsupportedError(f"{where}: folding it at import time asks for a tensor of unbounded "
                               f"or negative size (its constant inputs make no sense as sizes)")
    check_budget(elements * WORST_ITEMSIZE,
                 f"{where}: folding it at import time builds a tensor of {elements:,} elements, which",
                 UnsupportedError, "a model for a microcontroller never needs that")

