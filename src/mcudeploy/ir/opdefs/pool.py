"""Pooling and reductions."""
from __future__ import annotations

import math

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import ACTIVATION_ATTRS, LAYOUT_ATTR, macc_per_input, need_rank, spatial_axes, window_out

POOL_ATTRS = {
    "layout": LAYOUT_ATTR,
    "kernel_shape": Attr("ints"),
    "strides": Attr("ints", (1, 1)),
    "pads": Attr("ints", (0, 0, 0, 0)),
    "dilations": Attr("ints", (1, 1)),
    "ceil_mode": Attr("int", 0, (0, 1)),
    **ACTIVATION_ATTRS,
}


def _pool_macc(node) -> int:
    """MACC = output elements x window size."""
    return math.prod(node.outputs[0].shape) * math.prod(node.attrs["kernel_shape"])


def _pool(inputs, attrs):
    x = inputs[0]
    need_rank(x, 4, "pooling input X")
    if x.dtype == DType.BOOL:     # neither ONNX nor TFLite pools booleans (no order, no mean)
        raise ValueError("pooling input X is bool; pooling takes numbers (ONNX: float, int8, uint8): "
                         "Cast the input to a number type first")
    layout = attrs["layout"]
    (kh, kw), (sh, sw) = attrs["kernel_shape"], attrs["strides"]
    (dh, dw), (pt, pl, pb, pr) = attrs["dilations"], attrs["pads"]
    ah, aw = spatial_axes(layout)
    ceil = bool(attrs["ceil_mode"])
    shape = list(x.shape)
    shape[ah] = window_out(x.shape[ah], kh, sh, dh, pt, pb, ceil)
    shape[aw] = window_out(x.shape[aw], kw, sw, dw, pl, pr, ceil)
    return [TensorType(x.dtype, tuple(shape))]


@op("MaxPool", "pool", inputs=("X",), attrs=POOL_ATTRS, macc=_pool_macc)
def max_pool(inputs, attrs):
    """Maximum over each window; padded positions never win. Then the fused clamp."""
    return _pool(inputs, attrs)


@op("AveragePool", "pool", inputs=("X",), macc=_pool_macc,
    attrs={**POOL_ATTRS, "count_include_pad": Attr("int", 0, (0, 1))})
def average_pool(inputs, attrs):
    """Mean over each window; padded positions count in the divisor only when
    ``count_include_pad`` (TFLite never counts them). Then the fused clamp."""
    return _pool(inputs, attrs)


@op("GlobalAveragePool", "pool", inputs=("X",), attrs={"layout": LAYOUT_ATTR}, macc=macc_per_input)
def global_average_pool(inputs, attrs):
    """Mean over H and W, kept as size-1 dimensions."""
    x = inputs[0]
    need_rank(x, 4, "GlobalAveragePool input X")
    shape = list(x.shape)
    for axis in spatial_axes(attrs["layout"]):
        shape[axis] = 1
    return [TensorType(x.dtype, tuple(shape))]


@op("ReduceMean", "reduce", inputs=("X",), macc=macc_per_input,
    attrs={"axes": Attr("ints"), "keepdims": Attr("int", 1, (0, 1))})
def reduce_mean(inputs, attrs):
    """Mean over ``axes`` (explicit, non-negative after import); TFLite MEAN."""
    x = inputs[0]
    axes = {a % x.rank for a in attrs["axes"]} if x.rank else set()
    if any(not -x.rank <= a < x.rank for a in attrs["axes"]):
        raise ValueError(f"axes {attrs['axes']} out of range for {x.type_str()}")
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return [TensorType(x.dtype, shape)]
