"""Matrix products: Gemm (ONNX Gemm and TFLite FULLY_CONNECTED) and MatMul."""
from __future__ import annotations

import math

from ..registry import Attr, TensorType, op
from ._common import ACTIVATION_ATTRS, broadcast, need_rank


def _gemm_macc(node) -> int:
    """MACC = M x N x K."""
    a = node.inputs[0]
    k = a.shape[0] if node.attrs["transA"] else a.shape[1]
    return math.prod(node.outputs[0].shape) * k


@op("Gemm", "matmul", inputs=("A", "B", "C?"), macc=_gemm_macc,
    attrs={"transA": Attr("int", 0, (0, 1)), "transB": Attr("int", 0, (0, 1)),
           "alpha": Attr("float", 1.0), "beta": Attr("float", 1.0), **ACTIVATION_ATTRS})
def gemm(inputs, attrs):
    """``Y = alpha * op(A) @ op(B) + beta * C``, ``op`` transposes when transA / transB is 1;
    then the fused clamp. TFLite FULLY_CONNECTED is ``Gemm(transB=1)`` with weights
    ``[N, K]`` (the importer reshapes a higher-rank input to ``[M, K]`` first)."""
    a, b = inputs[0], inputs[1]
    need_rank(a, 2, "Gemm input A")
    need_rank(b, 2, "Gemm input B")
    m, k = a.shape[::-1] if attrs["transA"] else a.shape
    k2, n = b.shape[::-1] if attrs["transB"] else b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: A {a.type_str()} vs B {b.type_str()} "
                         f"(transA={attrs['transA']}, transB={attrs['transB']})")
    if len(inputs) > 2 and inputs[2] is not None:
        if broadcast(inputs[2].shape, (m, n)) != (m, n):
            raise ValueError(f"C {inputs[2].type_str()} does not broadcast to [{m},{n}]")
    return [TensorType(a.dtype, (m, n))]


def _matmul_shape(a_shape, b_shape) -> tuple[tuple[int, ...], int]:
    a = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    if a[-1] != b[-2]:
        raise ValueError(f"inner dimensions differ: {list(a_shape)} @ {list(b_shape)}")
    batch = broadcast(a[:-2], b[:-2])
    shape = batch + (a[-2], b[-1])
    if len(a_shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b_shape) == 1:
        shape = shape[:-1]
    return shape, a[-1]


def _matmul_macc(node) -> int:
    """MACC = output elements x K."""
    _, k = _matmul_shape(node.inputs[0].shape, node.inputs[1].shape)
    return math.prod(node.outputs[0].shape) * k


@op("MatMul", "matmul", inputs=("A", "B"), macc=_matmul_macc)
def matmul(inputs, attrs):
    """``numpy.matmul`` semantics: batched, broadcasting batch dimensions, 1-D operands promoted."""
    shape, _ = _matmul_shape(inputs[0].shape, inputs[1].shape)
    return [TensorType(inputs[0].dtype, shape)]
