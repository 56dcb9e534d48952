"""Integer graph inputs and outputs: the what-if fix of a quantized model with float I/O.

    integer_io(graph) -> Rewrite | None

Input: a quantized graph whose float inputs are converted by a ``QuantizeLinear`` (their only
reader) and whose float outputs come from a ``DequantizeLinear``. Output: the same graph
without those edge conversions (:class:`~.rewrites.Rewrite`): each such input becomes the
integer tensor the ``QuantizeLinear`` made (same name as the float input, its scale and zero
point), each such output the integer tensor the ``DequantizeLinear`` read. The layers'
arithmetic is unchanged; what goes is the float buffers (4 bytes per element) the network
and the application hold, and two conversion layers. The application then quantizes its
input and dequantizes the output itself, ``q = round(x / scale) + zero_point`` (what
``mcudeploy quantize --int8-io`` makes, re-quantizing from the float model with the same data).
None when no input or output has such a conversion (nothing to change).
"""
from __future__ import annotations

from ..ir import Graph, Value, verify
from .reshape import _twin
from .rewrites import Rewrite, total_macc


def _edge_quantize(value: Value):
    users = list(value.users)
    if len(users) == 1 and users[0].op == "QuantizeLinear" and users[0].inputs[0] is value:
        return users[0]
    return None


def _edge_dequantize(value: Value):
    producer = value.producer
    if producer is not None and producer.op == "DequantizeLinear" and len(producer.inputs[0].users) == 1:
        return producer
    return None


def integer_io(graph: Graph) -> Rewrite | None:
    """``graph`` without its float edge conversions (module docstring), rebuilt."""
    quantizers = {id(v): node for v in graph.inputs if (node := _edge_quantize(v)) is not None}
    dequantizers = {id(v): node for v in graph.outputs if (node := _edge_dequantize(v)) is not None}
    if not quantizers and not dequantizers:
        return None
    skipped = {id(node) for node in [*quantizers.values(), *dequantizers.values()]}
    new = Graph(graph.name)
    new.metadata = dict(graph.metadata)
    mapping: dict[int, Value] = {}
    changes = []
    for value in graph.inputs:
        node = quantizers.get(id(value))
        source = node.outputs[0] if node is not None else value
        added = new.add_input(value.name, source.dtype, source.shape, quant=source.quant, layout=source.layout)
        added.origin = value.origin
        mapping[id(source)] = added
        if node is not None:
            quant = source.quant
            assert quant is not None   # a QuantizeLinear output carries QuantParams (IR invariant 8)
            changes.append(f"input {value.name}: {value.dtype.value} -> {source.dtype.value} (scale "
                           f"{float(quant.scale.reshape(-1)[0]):.6g}, zero point "
                           f"{int(quant.zero_point.reshape(-1)[0])}); {node.name} removed")
    for node in graph.nodes:
        if id(node) in skipped:
            continue
        for value in node.inputs:
            if value is not None and id(value) not in mapping:       # a constant: shared, as rebuild does
                mapping[id(value)] = _twin(new, value, {})
                new._claim(value.name)
        inputs = [None if v is None else mapping[id(v)] for v in node.inputs]
        copied = new.add_node(node.op, inputs, dict(node.attrs), name=node.name,
                              output_names=[v.name for v in node.outputs])
        for old, made in zip(node.outputs, copied.outputs):
            made.quant, made.layout, made.origin = old.quant, old.layout, old.origin
            mapping[id(old)] = made
    outputs = []
    for value in graph.outputs:
        node = dequantizers.get(id(value))
        outputs.append(mapping[id(node.inputs[0] if node is not None else value)])
        if node is not None:
            changes.append(f"output {value.name}: {node.inputs[0].dtype.value} {node.inputs[0].name} "
                           f"(was dequantized to {value.dtype.value} by {node.name}, removed)")
    new.outputs = outputs
    verify(new)
    return Rewrite(new, changes, exact=True, macc_before=total_macc(graph), macc_after=total_macc(new))
