"""Integer AveragePool, MaxPool (NHWC) and ReduceMean (TFLite MEAN), int8 and int16.

Pooling does not rescale: input and output must share scale and zero point (as TFLite
requires). AveragePool sums the window's in-bounds elements (padding never counts) and
divides with rounding half away from zero in C integer arithmetic::

    avg = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count     (trunc division)
    Y   = clamp(avg, min, max)

MaxPool takes the in-bounds maximum, then the clamp.

ReduceMean (TFLM ``QuantizedMeanOrSum``): with ``m, s = quantize_multiplier(s_in / s_out)``
and ``n`` reduced elements, ``k = min(floor(log2 n), 32, 31 + s)``,
``m' = (m << k) // n``, ``s' = s - k``; then
``Y = clamp(mbqm(wrap32(sum(X) - zp_in * n), m', s') + zp_out, dtype range)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import activation_range, clamp_to, fold_batch, need_dtype, per_tensor, unfold_batch, where, windows
from .registry import int_kernel


@dataclass(frozen=True)
class PoolParams:
    """Prepared parameters of an integer pooling."""
    activation_min: int
    activation_max: int


@dataclass(frozen=True)
class MeanParams:
    """Prepared parameters of an integer mean."""
    input_zero_point: int
    output_zero_point: int
    output_multiplier: int
    output_shift: int
    element_count: int


def prepare_pool(node: Node) -> PoolParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8", "int16"), "input")
    if node.attrs["layout"] != "NHWC":
        raise UnsupportedError(f"{where(node)}: the integer reference pools NHWC tensors only")
    if node.attrs["dilations"] != (1, 1) or node.attrs.get("count_include_pad", 0) \
            or node.attrs["ceil_mode"]:
        raise UnsupportedError(f"{where(node)}: dilated, ceil_mode or count_include_pad pooling "
                               "has no TFLite integer kernel")
    if per_tensor(node, x, "input") != per_tensor(node, out, "output"):
        raise UnsupportedError(f"{where(node)}: input and output quantization differ; TFLite "
                               "integer pooling does not rescale (requantize separately)")
    return PoolParams(*activation_range(node))


def _padded_windows(node: Node, x: np.ndarray, fill: int) -> tuple[np.ndarray, np.ndarray]:
    """The windows view of ``x`` padded with ``fill``, and the matching in-bounds mask view."""
    top, left, bottom, right = node.attrs["pads"]
    pad = ((0, 0), (top, bottom), (left, right), (0, 0))
    padded = np.pad(x, pad, constant_values=fill)
    inside = np.pad(np.ones((1,) + x.shape[1:3] + (1,), dtype=np.int64), pad)
    args = (node.outputs[0].shape[1:3], node.attrs["kernel_shape"], node.attrs["strides"], (1, 1))
    return windows(padded, *args), windows(inside, *args)


@int_kernel("AveragePool", prepare=prepare_pool)
def average_pool(node: Node, params: PoolParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    view, inside = _padded_windows(node, fold_batch(x).astype(np.int64), 0)
    acc = view.sum(axis=(3, 4))
    count = inside.sum(axis=(3, 4))
    average = np.where(acc > 0, fp.truncating_divide(acc + count // 2, count),
                       fp.truncating_divide(acc - count // 2, count))
    result = clamp_to(average, params.activation_min, params.activation_max, x.dtype)
    return [unfold_batch(result, x.shape[0])]


@int_kernel("MaxPool", prepare=prepare_pool)
def max_pool(node: Node, params: PoolParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    view, _ = _padded_windows(node, fold_batch(x), int(np.iinfo(x.dtype).min))
    result = clamp_to(view.max(axis=(3, 4)), params.activation_min, params.activation_max, x.dtype)
    return [unfold_batch(result, x.shape[0])]


def prepare_mean(node: Node) -> MeanParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8", "int16"), "input")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    multiplier, shift = fp.quantize_multiplier(float(input_scale) / float(output_scale))
    axes = {a % x.rank for a in node.attrs["axes"]}
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    multiplier = (multiplier << extra) // count
    return MeanParams(input_zero_point, output_zero_point, multiplier, shift - extra, count)


@int_kernel("ReduceMean", prepare=prepare_mean)
def reduce_mean(node: Node, params: MeanParams, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    rank = x.ndim - 1
    axes = tuple(sorted(1 + a % rank for a in node.attrs["axes"]))
    total = x.astype(np.int64).sum(axis=axes, keepdims=bool(node.attrs["keepdims"]))
    shifted = fp.wrap_int32(total - params.input_zero_point * params.element_count)
    result = fp.multiply_by_quantized_multiplier(shifted, params.output_multiplier,
                                                 params.output_shift) + params.output_zero_point
    info = np.iinfo(x.dtype)
    return [clamp_to(result, int(info.min), int(info.max), x.dtype)]
