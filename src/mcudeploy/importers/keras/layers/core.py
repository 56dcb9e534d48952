"""Dense -> IR Gemm; the layers that are the identity at inference.

Dense computes ``Y = X @ kernel + bias`` on the last axis, kernel ``[K, N]``: written as
TFLite's FULLY_CONNECTED is, ``Gemm(transB=1)`` with weights ``[N, K] = kernel^T``. An input
of rank > 2 ``[..., K]`` is reshaped to ``[M, K]`` first and the result back to
``[..., N]``. A ReLU / ReLU6 activation is the Gemm's fused clamp.

Dropout, SpatialDropout, GaussianNoise, GaussianDropout, AlphaDropout and
ActivityRegularization only act in training: their output is their input, no node.
"""
from __future__ import annotations

import math

from ....ir import Value
from ..context import LayerContext
from ..registry import PASS_THROUGH, apply_activation, converter, fused_clamp


@converter("Dense")
def dense(ctx: LayerContext) -> list[Value]:
    x = ctx.single_input()
    ctx.check_float(x)
    use_bias = bool(ctx.option("use_bias", True))
    arrays = ctx.weights(1 + int(use_bias))
    kernel = arrays[0]
    if kernel.ndim != 2 or x.rank < 2 or kernel.shape[0] != x.shape[-1]:
        raise ctx.unsupported(f"kernel {list(kernel.shape)} does not apply to input {x.type_str()}")
    depth, units = kernel.shape
    weights = ctx.constant(kernel.T, "kernel")
    bias = ctx.constant(arrays[1], "bias") if use_bias else None
    attrs = {"transB": 1, **fused_clamp(ctx)}
    if x.rank == 2:
        return [apply_activation(ctx, ctx.add("Gemm", [x, weights, bias], attrs))]
    rows = math.prod(x.shape[:-1])
    flat = ctx.add("Reshape", [x], {"shape": (rows, depth)}, suffix="reshape_input")
    product = ctx.add("Gemm", [flat, weights, bias], attrs)
    y = ctx.add("Reshape", [product], {"shape": tuple(x.shape[:-1]) + (units,)},
                suffix="reshape_output")
    return [apply_activation(ctx, y)]


@converter(*PASS_THROUGH)
def identity(ctx: LayerContext) -> list[Value]:
    return [ctx.single_input()]
