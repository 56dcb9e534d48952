"""Pooling layers -> IR pools (NHWC).

* MaxPooling2D / AveragePooling2D(pool_size, strides = pool_size by default, padding):
  MaxPool / AveragePool with explicit SAME / VALID pads; padded positions never count
  (TensorFlow's rule: ``count_include_pad = 0``).
* GlobalAveragePooling2D / GlobalMaxPooling2D(keepdims): ReduceMean / ReduceMax over
  axes (1, 2), as TFLite's MEAN / REDUCE_MAX.
"""
from __future__ import annotations

from ....ir import Value
from ..context import LayerContext
from ..registry import converter
from .spatial import pair, spatial_pads

POOLS = {"MaxPooling2D": "MaxPool", "MaxPool2D": "MaxPool",
         "AveragePooling2D": "AveragePool", "AvgPool2D": "AveragePool"}
GLOBAL_POOLS = {"GlobalAveragePooling2D": "ReduceMean", "GlobalAvgPool2D": "ReduceMean",
                "GlobalMaxPooling2D": "ReduceMax", "GlobalMaxPool2D": "ReduceMax"}


def _spatial_input(ctx: LayerContext) -> Value:
    ctx.channels_last()
    x = ctx.single_input()
    ctx.require_rank(x, 4)
    ctx.check_float(x)
    return x


@converter(*POOLS)
def pool_2d(ctx: LayerContext) -> list[Value]:
    x = _spatial_input(ctx)
    kernel = pair(ctx, "pool_size", 2)
    strides = pair(ctx, "strides", kernel) if ctx.option("strides") is not None else kernel
    attrs = {"layout": "NHWC", "kernel_shape": kernel, "strides": strides,
             "pads": spatial_pads(ctx, x.shape[1:3], kernel, strides)}
    return [ctx.add(POOLS[ctx.layer.class_name], [x], attrs)]


@converter(*GLOBAL_POOLS)
def global_pool_2d(ctx: LayerContext) -> list[Value]:
    x = _spatial_input(ctx)
    keepdims = int(bool(ctx.option("keepdims", False)))
    return [ctx.add(GLOBAL_POOLS[ctx.layer.class_name], [x], {"axes": (1, 2), "keepdims": keepdims})]
