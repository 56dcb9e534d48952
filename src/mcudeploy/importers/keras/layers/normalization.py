"""BatchNormalization, Rescaling, Normalization -> IR arithmetic on NHWC tensors.

* BatchNormalization (inference): ``Y = (X - moving_mean) / sqrt(moving_variance + eps) *
  gamma + beta`` over the last axis; weights ``[gamma]? [beta]? moving_mean,
  moving_variance`` (gamma without ``scale``, beta without ``center``: 1 and 0). A rank-2
  or rank-4 input is an IR BatchNormalization (NHWC), which the ``fold_batchnorm`` pass
  folds into the Conv / Gemm before it; other ranks are the equivalent ``Mul(X, s)`` then
  ``Add(., beta - mean * s)`` with ``s = gamma / sqrt(var + eps)``.
* Rescaling(scale, offset): ``Y = X * scale + offset`` (Mul then Add; a 1 or 0 is skipped).
* Normalization(axis, mean, variance; or adapted weights ``mean, variance, count``):
  ``Y = (X - mean) / max(sqrt(variance), 1e-7)`` (Keras's ``backend.epsilon()``), written as
  ``Sub`` then ``Mul`` by the reciprocal; ``invert=True`` is ``Y = X * sqrt(variance) + mean``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ....ir import Value
from ..context import LayerContext
from ..registry import converter

KERAS_EPSILON = 1e-7


def _last_axis_only(ctx: LayerContext, axis: Any, rank: int) -> None:
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    if len(axes) != 1 or not isinstance(axes[0], int) or axes[0] % rank != rank - 1:
        raise ctx.unsupported(f"axis {axis!r} is not supported: only the last (channel) axis "
                              "is (channels_last)")


@converter("BatchNormalization")
def batch_normalization(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    _last_axis_only(ctx, ctx.option("axis", -1), x.rank)
    scale, center = bool(ctx.option("scale", True)), bool(ctx.option("center", True))
    arrays = list(ctx.weights(2 + scale + center))
    channels = x.shape[-1]
    gamma = arrays.pop(0) if scale else np.ones(channels, np.float32)
    beta = arrays.pop(0) if center else np.zeros(channels, np.float32)
    mean, variance = arrays
    params = [gamma, beta, mean, variance]
    if any(p.shape != (channels,) for p in params):
        raise ctx.unsupported(f"parameters {[list(p.shape) for p in params]} do not match the "
                              f"input's {channels} channels")
    epsilon = float(ctx.option("epsilon", 1e-3))
    if x.rank in (2, 4):
        names = ("gamma", "beta", "moving_mean", "moving_variance")
        constants = [ctx.constant(p, n) for p, n in zip(params, names)]
        return [ctx.add("BatchNormalization", [x, *constants], {"epsilon": epsilon, "layout": "NHWC"})]
    factor = gamma.astype(np.float64) / np.sqrt(variance.astype(np.float64) + epsilon)
    shift = beta - mean * factor
    scaled = ctx.add("Mul", [x, ctx.constant(factor, "scale")], suffix="scale")
    return [ctx.add("Add", [scaled, ctx.constant(shift, "shift")])]


def _floats(ctx: LayerContext, key: str, default: float) -> np.ndarray:
    value = ctx.option(key, default)
    try:
        array = np.asarray(default if value is None else value, dtype=np.float32)
    except (TypeError, ValueError):
        raise ctx.unsupported(f"option {key} = {value!r} is not a number or a list of numbers") from None
    if not np.all(np.isfinite(array)):
        raise ctx.unsupported(f"option {key} = {value!r} must be finite")
    return array


@converter("Rescaling")
def rescaling(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    scale, offset = _floats(ctx, "scale", 1.0), _floats(ctx, "offset", 0.0)
    has_offset = bool(np.any(offset != 0))
    y = x
    if np.any(scale != 1):
        y = ctx.add("Mul", [x, ctx.constant(scale, "scale")], suffix="scale" if has_offset else "")
    if has_offset:
        y = ctx.add("Add", [y, ctx.constant(offset, "offset")])
    return [y]


def _normalization_statistics(ctx: LayerContext, x: Value) -> tuple[np.ndarray, np.ndarray]:
    arrays = ctx.stored_weights()
    if ctx.option("mean") is not None and ctx.option("variance") is not None:
        mean, variance = _floats(ctx, "mean", 0.0), _floats(ctx, "variance", 1.0)
    elif len(arrays) >= 2:
        mean, variance = arrays[0], arrays[1]
    else:
        raise ctx.unsupported("has neither mean / variance options nor adapted weights; "
                              "call layer.adapt(data) or give mean and variance")
    axis = ctx.option("axis", -1)
    axes = [a % x.rank for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    shape = tuple(x.shape[i] if i in axes else 1 for i in range(x.rank))
    statistics = []
    for name, array in (("mean", mean), ("variance", variance)):
        if array.size != 1 and array.size != int(np.prod(shape)):
            raise ctx.unsupported(f"{name} {list(array.shape)} does not match input "
                                  f"{x.type_str()} on axis {axis}")
        statistics.append(array.reshape(()) if array.size == 1 else array.reshape(shape))
    return statistics[0], statistics[1]


@converter("Normalization")
def normalization(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    mean, variance = _normalization_statistics(ctx, x)
    std = np.sqrt(variance.astype(np.float64))
    if ctx.option("invert", False):
        scaled = ctx.add("Mul", [x, ctx.constant(std, "std")], suffix="scale")
        return [ctx.add("Add", [scaled, ctx.constant(mean, "mean")])]
    centered = ctx.add("Sub", [x, ctx.constant(mean, "mean")], suffix="center")
    inverse = 1.0 / np.maximum(std, KERAS_EPSILON)
    return [ctx.add("Mul", [centered, ctx.constant(inverse, "inverse_std")])]
