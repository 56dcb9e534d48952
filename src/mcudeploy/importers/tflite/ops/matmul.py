"""FULLY_CONNECTED and BATCH_MATMUL -> IR Gemm / MatMul.

FULLY_CONNECTED computes ``Y[m, n] = sum_k X[m, k] * W[n, k] + B[n]`` with weights
``[N, K]``: ``Gemm(transB=1)``. An input of rank != 2 is first reshaped to ``[M, K]`` with
``M = size / K``; with ``keep_num_dims`` the result is reshaped back to
``input.shape[:-1] + [N]``. BATCH_MATMUL is ``MatMul`` with ``adj_x`` / ``adj_y`` turned
into Transposes of the last two axes.
"""
from __future__ import annotations

from ..common import converter, fused_activation
from ..context import ConversionContext


@converter("FULLY_CONNECTED")
def fully_connected(ctx: ConversionContext) -> None:
    if int(ctx.options.get("weights_format", 0)) != 0:
        raise ctx.unsupported("shuffled weights (weights_format SHUFFLED4x16INT8) are not "
                              "supported; convert the model with the default weights format")
    source, w = ctx.require_input(0, "input"), ctx.require_input(1, "weights")
    if w.rank != 2:
        raise ctx.unsupported(f"weights {w.type_str()} must be rank 2 [N, K]")
    units, depth = w.shape
    if source.size % depth:
        raise ctx.unsupported(f"input {source.type_str()} does not split into rows of {depth}")
    rows = source.size // depth
    x = source
    if x.shape != (rows, depth):
        x = ctx.add_helper("Reshape", [x], {"shape": (rows, depth)}, suffix="reshape_input",
                           quant=x.quant)
    operands, attrs = [x, w, ctx.input(2)], {"transB": 1, **fused_activation(ctx)}
    if ctx.options.get("keep_num_dims", False):
        target = tuple(source.shape[:-1]) + (units,)
    else:
        target = (rows, units) if ctx.infer_shapes else ctx.stored_shape()
    if target == (rows, units):
        ctx.add_node("Gemm", operands, attrs)
        return
    product = ctx.add_helper("Gemm", operands, attrs, suffix="gemm", quant=ctx.output_quant(),
                             main=True)
    ctx.add_node("Reshape", [product], {"shape": target}, suffix="reshape_output")


def _swap_last_two(ctx: ConversionContext, value, suffix: str):
    perm = list(range(value.rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return ctx.add_helper("Transpose", [value], {"perm": perm}, suffix=suffix, quant=value.quant)


@converter("BATCH_MATMUL")
def batch_matmul(ctx: ConversionContext) -> None:
    a, b = ctx.require_input(0, "A"), ctx.require_input(1, "B")
    if a.rank < 2 or b.rank < 2:
        raise ctx.unsupported(f"operands {a.type_str()} and {b.type_str()} must be rank >= 2")
    if ctx.options.get("adj_x"):
        a = _swap_last_two(ctx, a, "adjoint_a")
    if ctx.options.get("adj_y"):
        b = _swap_last_two(ctx, b, "adjoint_b")
    ctx.add_node("MatMul", [a, b])
