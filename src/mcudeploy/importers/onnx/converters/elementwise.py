"""Arithmetic and matrix products: Add, Sub, Mul, Div, Gemm, MatMul, BatchNormalization.

These map one-to-one onto IR ops with the same semantics (numpy broadcasting, Gemm's
``alpha * op(A) @ op(B) + beta * C``). BatchNormalization is the inference form; its
training outputs (running mean / variance) and ``training_mode=1`` are refused.
"""
from __future__ import annotations

import onnx

from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW


@converter("Add", "Sub", "Mul", "Div")
def convert_binary(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit(node.op_type, [ctx.input(node, 0), ctx.input(node, 1)], None, node)


@converter("MatMul")
def convert_matmul(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("MatMul", [ctx.input(node, 0), ctx.input(node, 1)], None, node)


@converter("Gemm")
def convert_gemm(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    kept = {key: attrs[key] for key in ("transA", "transB", "alpha", "beta") if key in attrs}
    inputs = [ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)]
    ctx.emit("Gemm", inputs, kept, node)


@converter("BatchNormalization")
def convert_batch_normalization(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    used = [node.output[i] for i in range(1, len(node.output)) if ctx.output_used(node, i)]
    if attrs.get("training_mode", 0) or used:
        raise ctx.unsupported(node, "training-mode batch normalization (running statistics "
                              f"outputs {used}) is not supported; export the model in "
                              "inference mode (model.eval())")
    inputs = [ctx.input(node, i) for i in range(5)]
    ir_attrs = {"epsilon": attrs.get("epsilon", 1e-5), "layout": NCHW}
    output = ctx.emit("BatchNormalization", inputs, ir_attrs, node, outputs=[node.output[0]])
    if output.outputs[0].rank == 4:
        output.outputs[0].layout = NCHW
