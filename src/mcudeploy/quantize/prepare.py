"""Float graph -> the float graph the quantizer calibrates and quantizes.

Runs the cleanup pipeline (constant folding, Dropout / Identity removal, BatchNorm folding,
activation fusion, NHWC layout), then rewrites float ops into the forms TFLite's integer
kernels take:

* ``MatMul(X, const W[K, N])`` (+ a following ``Add`` of a constant ``[N]``) ->
  ``Gemm(X, W^T, B, transB=1)`` (FULLY_CONNECTED);
* ``Gemm`` with a constant ``B`` and ``transB = 0`` -> ``transB = 1`` with ``B^T``;
  ``alpha`` folds into the weights and ``beta`` into the bias;
* NHWC ``GlobalAveragePool`` -> ``ReduceMean(axes=(1, 2), keepdims=1)`` (TFLite MEAN).

Node and value names are kept, so calibration ranges and reports refer to the model's names.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, get_op
from ..passes import run_pipeline


def prepare_for_quantization(graph: Graph, *, pipeline: str = "cleanup") -> Graph:
    """A cleaned copy of ``graph`` with the integer-friendly rewrites above."""
    prepared = graph.copy()
    run_pipeline(prepared, pipeline)
    for node in list(prepared.nodes):
        if node.op == "MatMul":
            _matmul_to_gemm(prepared, node)
        elif node.op == "Gemm":
            _normalize_gemm(prepared, node)
        elif node.op == "GlobalAveragePool" and node.attrs["layout"] == "NHWC":
            _replace(prepared, node, "ReduceMean", list(node.inputs), {"axes": (1, 2), "keepdims": 1})
    return prepared


def _replace(graph: Graph, node: Node, op: str, inputs: list, attrs: dict) -> Node:
    """Turn ``node`` into an ``op`` node in place (same name, same output value); extra old
    inputs are dropped (set to ``None``)."""
    node.op = op
    node.attrs = get_op(op).normalize_attrs(attrs, node_name=node.name)
    for index in range(max(len(node.inputs), len(inputs))):
        node.set_input(index, inputs[index] if index < len(inputs) else None)
    return node


def _bias_add(graph: Graph, node: Node, units: int) -> tuple[Node, np.ndarray] | None:
    """The ``Add`` of a constant ``[units]`` (or ``[1, units]``) that alone reads ``node``."""
    output = node.outputs[0]
    if len(output.uses) != 1 or output in graph.outputs:
        return None
    user, index = output.uses[0]
    other = user.inputs[1 - index] if user.op == "Add" else None
    if other is None or other.const is None or other.size != units or other.shape[-1] != units:
        return None
    if user.attrs.get("activation_min") is not None or user.attrs.get("activation_max") is not None:
        return None
    return user, other.const.reshape(units).astype(np.float32)


def _matmul_to_gemm(graph: Graph, node: Node) -> None:
    x, weights = node.inputs
    if weights.const is None or x.rank != 2 or weights.rank != 2:
        return
    units = weights.shape[1]
    transposed = graph.add_constant(f"{weights.name}_t", np.ascontiguousarray(weights.const.T))
    found = _bias_add(graph, node, units)
    bias = None if found is None else graph.add_constant(f"{node.name}_bias", found[1])
    gemm = _replace(graph, node, "Gemm", [x, transposed, bias], {"transB": 1})
    if found is not None:
        add = found[0]  # the Gemm takes over the Add's output value (and so its name)
        final = add.outputs[0]
        graph.nodes.remove(add)
        add.detach()
        gemm.replace_output(0, final)


def _normalize_gemm(graph: Graph, node: Node) -> None:
    attrs = dict(node.attrs)
    a, weights, bias = node.inputs[0], node.inputs[1], node.input(2)
    if weights.const is None or attrs["transA"]:
        return
    if attrs["transB"] and attrs["alpha"] == 1.0 and attrs["beta"] == 1.0:
        return
    matrix = weights.const if attrs["transB"] else weights.const.T
    matrix = (matrix * np.float32(attrs["alpha"])).astype(np.float32)
    new_weights = graph.add_constant(f"{weights.name}_t", np.ascontiguousarray(matrix))
    new_bias = bias
    if bias is not None and attrs["beta"] != 1.0:
        if bias.const is None:
            return
        new_bias = graph.add_constant(f"{bias.name}_scaled",
                                      (bias.const * np.float32(attrs["beta"])).astype(np.float32))
    attrs.update(transB=1, alpha=1.0, beta=1.0)
    _replace(graph, node, "Gemm", [a, new_weights, new_bias], attrs)
