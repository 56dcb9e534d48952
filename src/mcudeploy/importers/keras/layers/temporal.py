"""1-D (temporal) layers on ``[N, L, C]`` tensors, written with the 2-D NHWC ops on
``[N, 1, L, C]`` (H = 1), as TFLite converts them: ``Reshape`` to rank 4
(``<layer>/expand``), the 2-D op (the node ``<layer>``), ``Reshape`` back
(``<layer>/squeeze``).

* Conv1D(filters, kernel_size, strides, dilation_rate, groups, padding valid / same /
  causal): kernel ``[k, C/g, O]`` -> NHWC ``[O, 1, k, C/g]``; ``causal`` pads
  ``(k - 1) * dilation`` on the left only.
* MaxPooling1D / AveragePooling1D(pool_size, strides = pool_size, padding): the 2-D pool
  with window ``1 x k``.
* GlobalAveragePooling1D(keepdims): ReduceMean over axis 1; GlobalMaxPooling1D(keepdims):
  the whole-window MaxPool of :func:`.pooling.global_max_pool` on ``[N, 1, L, C]``.
* ZeroPadding1D(padding) -> Pad of axis 1; Cropping1D(cropping) -> Slice of axis 1.
"""
from __future__ import annotations

from typing import Any

from ....ir import Value
from ..context import LayerContext
from ..registry import apply_activation, converter, fused_clamp
from .pooling import global_max_pool
from .spatial import padding_1d


def _one(ctx: LayerContext, key: str, default: int | None) -> int:
    value: Any = ctx.option(key, default)
    value = default if value is None else value
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if not isinstance(value, int) or value <= 0:
        raise ctx.unsupported(f"{key} {value!r} must be one positive integer")
    return value


def _sequence(ctx: LayerContext) -> Value:
    if ctx.option("data_format", "channels_last") not in (None, "channels_last"):
        raise ctx.unsupported("data_format channels_first is not supported; use channels_last")
    x = ctx.single_input()
    ctx.require_rank(x, 3)
    ctx.check_float(x)
    return x


def _pads(ctx: LayerContext, length: int, kernel: int, stride: int, dilation: int) -> tuple[int, ...]:
    padding = str(ctx.option("padding", "valid")).lower()
    if padding == "valid":
        return 0, 0, 0, 0
    if padding == "causal":
        return 0, (kernel - 1) * dilation, 0, 0
    if padding != "same":
        raise ctx.unsupported(f"padding {padding!r} is not supported (valid, same, causal)")
    left, right = padding_1d(length, kernel, stride, dilation)
    return 0, left, 0, right


def _as_2d(ctx: LayerContext, x: Value, op: str, operands: list[Value | None], attrs: dict[str, Any]) -> Value:
    wide = ctx.add("Reshape", [x], {"shape": (x.shape[0], 1, x.shape[1], x.shape[2])}, suffix="expand")
    y = ctx.add(op, [wide, *operands], attrs)
    return ctx.add("Reshape", [y], {"shape": (y.shape[0], y.shape[2], y.shape[3])}, suffix="squeeze")


@converter("Conv1D", "Convolution1D")
def conv1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    use_bias = bool(ctx.option("use_bias", True))
    arrays = ctx.weights(1 + int(use_bias))
    kernel, groups = arrays[0], int(ctx.option("groups", 1) or 1)
    if kernel.ndim != 3 or kernel.shape[1] * groups != x.shape[2]:
        raise ctx.unsupported(f"kernel {list(kernel.shape)} with groups {groups} does not match input {x.type_str()}")
    size, stride, dilation = kernel.shape[0], _one(ctx, "strides", 1), _one(ctx, "dilation_rate", 1)
    weights = ctx.constant(kernel.transpose(2, 0, 1)[:, None], "kernel")
    bias = ctx.constant(arrays[1], "bias") if use_bias else None
    attrs = {"layout": "NHWC", "strides": (1, stride), "dilations": (1, dilation), "group": groups,
             "pads": _pads(ctx, x.shape[1], size, stride, dilation), **fused_clamp(ctx)}
    return [apply_activation(ctx, _as_2d(ctx, x, "Conv", [weights, bias], attrs))]


@converter("MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D")
def pool1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    size = _one(ctx, "pool_size", 2)
    stride = _one(ctx, "strides", size) if ctx.option("strides") is not None else size
    op = "MaxPool" if ctx.layer.class_name.startswith("Max") else "AveragePool"
    attrs = {"layout": "NHWC", "kernel_shape": (1, size), "strides": (1, stride),
             "pads": _pads(ctx, x.shape[1], size, stride, 1)}
    return [_as_2d(ctx, x, op, [], attrs)]


@converter("GlobalAveragePooling1D", "GlobalAvgPool1D")
def global_average_pool1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    return [ctx.add("ReduceMean", [x], {"axes": (1,), "keepdims": int(bool(ctx.option("keepdims", False)))})]


@converter("GlobalMaxPooling1D", "GlobalMaxPool1D")
def global_max_pool1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    wide = ctx.add("Reshape", [x], {"shape": (x.shape[0], 1, x.shape[1], x.shape[2])}, suffix="expand")
    keepdims = bool(ctx.option("keepdims", False))
    return [global_max_pool(ctx, wide, (x.shape[0], 1, x.shape[2]) if keepdims else (x.shape[0], x.shape[2]))]


def _two_ints(ctx: LayerContext, key: str) -> tuple[int, int]:
    value: Any = ctx.option(key, 1)
    if isinstance(value, int):
        value = (value, value)
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and v >= 0 for v in value)):
        raise ctx.unsupported(f"{key} {value!r} must be one or two non-negative integers")
    return int(value[0]), int(value[1])


@converter("ZeroPadding1D")
def zero_padding1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    before, after = _two_ints(ctx, "padding")
    return [ctx.add("Pad", [x], {"pads": (0, before, 0, 0, after, 0)})]


@converter("Cropping1D")
def cropping1d(ctx: LayerContext) -> list[Value]:
    x = _sequence(ctx)
    before, after = _two_ints(ctx, "cropping")
    if before + after >= x.shape[1]:
        raise ctx.unsupported(f"cropping {[before, after]} leaves nothing of {x.type_str()}")
    return [ctx.add("Slice", [x], {"starts": (before,), "ends": (x.shape[1] - after,), "axes": (1,), "steps": (1,)})]
