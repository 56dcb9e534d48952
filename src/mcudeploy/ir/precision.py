"""The numeric precision of a graph, from its values' dtypes and quantization parameters.

``precision(graph)`` is one of:

* ``"float"``   -- no quantization at all;
* ``"qdq"``     -- float compute between QuantizeLinear / DequantizeLinear pairs (ONNX QDQ);
* ``"integer"`` -- every compute node has quantized integer outputs (full-integer TFLite);
* ``"mixed"``   -- integer compute nodes and float compute nodes.

QuantizeLinear / DequantizeLinear are the edges, not compute.
"""
from __future__ import annotations

from .graph import Graph

EDGE_OPS = ("QuantizeLinear", "DequantizeLinear")


def precision(graph: Graph) -> str:
    """The graph's precision (module docstring)."""
    compute = [node for node in graph.nodes if node.op not in EDGE_OPS]
    integer = [n for n in compute if any(v.dtype.is_integer and v.quant is not None for v in n.outputs)]
    has_edges = len(compute) < len(graph.nodes)
    if not integer:
        return "qdq" if has_edges else "float"
    floating = [n for n in compute if all(v.dtype.is_float for v in n.outputs)]
    return "mixed" if floating else "integer"


def float_nodes(graph: Graph) -> list[str]:
    """Names of the compute nodes that stay float (what makes a graph ``mixed``)."""
    return [n.name for n in graph.nodes if n.op not in EDGE_OPS and n.outputs
            and all(v.dtype.is_float for v in n.outputs)]
