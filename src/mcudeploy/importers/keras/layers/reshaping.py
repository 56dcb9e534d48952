"""Reshaping layers -> IR shape ops (NHWC stays NHWC: no Transpose is added).

* Reshape(target_shape) -> Reshape ``[N, *target_shape]`` (one -1 resolved from the size);
  Flatten -> Reshape ``[N, prod(rest)]`` (row-major over H, W, C, as Keras flattens).
* Permute(dims) (1-based, batch excluded) -> Transpose ``perm = (0, *dims)``.
* ZeroPadding2D(padding) -> Pad ``(0, top, left, 0, 0, bottom, right, 0)`` with zeros;
  Cropping2D(cropping) -> Slice of H and W ``[top, H - bottom)``, ``[left, W - right)``.
* UpSampling2D(size, interpolation) -> Resize to ``[N, H*sH, W*sW, C]``: ``nearest``
  (``asymmetric``, floor: input ``floor(o / s)``) or ``bilinear`` (TensorFlow's
  ``half_pixel`` centres, clamped to the edge).
"""
from __future__ import annotations

import math
from typing import Any

from ....ir import Value
from ..context import LayerContext
from ..registry import converter
from .spatial import pair


@converter("Reshape")
def reshape(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    target = ctx.option("target_shape")
    if not isinstance(target, (list, tuple)) or not all(isinstance(d, int) for d in target) \
            or sum(d == -1 for d in target) > 1 or any(d == 0 or d < -1 for d in target):
        raise ctx.unsupported(f"target_shape {target!r} must be positive integers with at most one -1")
    known = math.prod(d for d in target if d != -1)
    rest = x.size // x.shape[0]
    if (-1 in target and rest % known) or (-1 not in target and known != rest):
        raise ctx.unsupported(f"cannot reshape {x.type_str()} to {list(target)} per sample")
    shape = tuple(rest // known if d == -1 else d for d in target)
    return [ctx.add("Reshape", [x], {"shape": (x.shape[0],) + shape})]


@converter("Flatten")
def flatten(ctx: LayerContext) -> list[Value]:
    ctx.channels_last()
    x = ctx.single_input()
    return [ctx.add("Reshape", [x], {"shape": (x.shape[0], x.size // x.shape[0])})]


@converter("Permute")
def permute(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    dims = ctx.option("dims")
    if not isinstance(dims, (list, tuple)) or sorted(dims) != list(range(1, x.rank)):
        raise ctx.unsupported(f"dims {dims!r} is not a permutation of 1..{x.rank - 1}")
    return [ctx.add("Transpose", [x], {"perm": (0, *dims)})]


def _two_sides(ctx: LayerContext, key: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((top, bottom), (left, right))`` from an int, a pair or a pair of pairs."""
    value: Any = ctx.option(key, 1)
    if isinstance(value, int):
        value = ((value, value), (value, value))
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        value = ((value[0], value[0]), (value[1], value[1]))
    if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(i, int) and i >= 0 for i in v)
            for v in value)):
        raise ctx.unsupported(f"{key} {value!r} must be non-negative integers")
    return (value[0][0], value[0][1]), (value[1][0], value[1][1])


@converter("ZeroPadding2D")
def zero_padding(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input()
    (top, bottom), (left, right) = _two_sides(ctx, "padding")
    return [ctx.add("Pad", [x], {"pads": (0, top, left, 0, 0, bottom, right, 0)})]


@converter("Cropping2D")
def cropping(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input()
    (top, bottom), (left, right) = _two_sides(ctx, "cropping")
    if top + bottom >= x.shape[1] or left + right >= x.shape[2]:
        raise ctx.unsupported(f"cropping {[[top, bottom], [left, right]]} leaves nothing of {x.type_str()}")
    return [ctx.add("Slice", [x], {"starts": (top, left), "ends": (x.shape[1] - bottom, x.shape[2] - right),
                                   "axes": (1, 2), "steps": (1, 1)})]


@converter("UpSampling2D")
def upsampling(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input()
    size = pair(ctx, "size", 2)
    interpolation = str(ctx.option("interpolation", "nearest"))
    sizes = (x.shape[0], x.shape[1] * size[0], x.shape[2] * size[1], x.shape[3])
    if interpolation == "nearest":
        attrs = {"sizes": sizes, "mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                 "nearest_mode": "floor"}
    elif interpolation == "bilinear":
        attrs = {"sizes": sizes, "mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    else:
        raise ctx.unsupported(f"interpolation {interpolation!r} is not supported (nearest, bilinear)")
    return [ctx.add("Resize", [x], attrs)]
