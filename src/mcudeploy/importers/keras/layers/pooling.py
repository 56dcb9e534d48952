"""Pooling layers -> IR pools (NHWC).

* MaxPooling2D / AveragePooling2D(pool_size, strides = pool_size by default, padding):
  MaxPool / AveragePool with explicit SAME / VALID pads; padded positions never count
  (TensorFlow's rule: ``count_include_pad = 0``).
* GlobalAveragePooling2D(keepdims): ReduceMean over axes (1, 2), as TFLite's MEAN.
* GlobalMaxPooling2D(keepdims): MaxPool with the whole ``H x W`` window (then a Reshape to
  ``[N, C]`` without keepdims): the same maximum as REDUCE_MAX, but a pool keeps its input's
  scale when quantized, which the integer ReduceMax needs and calibration does not give it.
"""
from __future__ import annotations

from ....ir import Value
from ..context import LayerContext
from ..registry import converter
from .spatial import pair, spatial_pads

POOLS = {"MaxPooling2D": "MaxPool", "MaxPool2D": "MaxPool",
         "AveragePooling2D": "AveragePool", "AvgPool2D": "AveragePool"}
GLOBAL_AVERAGE_POOLS = ("GlobalAveragePooling2D", "GlobalAvgPool2D")
GLOBAL_MAX_POOLS = ("GlobalMaxPooling2D", "GlobalMaxPool2D")


@converter(*POOLS)
def pool_2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    kernel = pair(ctx, "pool_size", 2)
    strides = pair(ctx, "strides", kernel) if ctx.option("strides") is not None else kernel
    attrs = {"layout": "NHWC", "kernel_shape": kernel, "strides": strides,
             "pads": spatial_pads(ctx, x.shape[1:3], kernel, strides)}
    return [ctx.add(POOLS[ctx.layer.class_name], [x], attrs)]


@converter(*GLOBAL_AVERAGE_POOLS)
def global_average_pool_2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    keepdims = int(bool(ctx.option("keepdims", False)))
    return [ctx.add("ReduceMean", [x], {"axes": (1, 2), "keepdims": keepdims})]


def global_max_pool(ctx: LayerContext, x: Value, output_shape: tuple[int, ...]) -> Value:
    """The maximum over H and W of NHWC ``x`` as a whole-window MaxPool, reshaped to
    ``output_shape`` unless that is the pool's own ``[N, 1, 1, C]``."""
    y = ctx.add("MaxPool", [x], {"layout": "NHWC", "kernel_shape": tuple(x.shape[1:3])})
    if tuple(output_shape) == y.shape:
        return y
    return ctx.add("Reshape", [y], {"shape": tuple(output_shape)}, suffix="squeeze")


@converter(*GLOBAL_MAX_POOLS)
def global_max_pool_2d(ctx: LayerContext) -> list[Value]:
    x = ctx.image_input(float_only=True)
    keepdims = bool(ctx.option("keepdims", False))
    shape = (x.shape[0], 1, 1, x.shape[3]) if keepdims else (x.shape[0], x.shape[3])
    return [global_max_pool(ctx, x, shape)]
