"""ONNX QDQ graph -> the quantized IR form (what the TFLite importer gives for full-integer
models), so that already-quantized ONNX models run on the integer reference executor.

Requires the cleanup pipeline first (:func:`qdq_to_quantized` runs it): folded BatchNorm,
fused activations, NHWC layout; ``DequantizeLinear`` (DQ) of constants is kept by constant
folding. Rewrites, repeated until none applies:

1. ``DataMove(DQ(W_const))`` -> ``DQ(W'_const)``: a Reshape / Transpose / Flatten / Squeeze /
   Unsqueeze of dequantized integer weights is applied to the integers (parameters permuted);
2. ``DataMove(DQ(x))`` -> ``DQ(DataMove(x))``: data movement runs on the integers, the output
   keeping ``x``'s per-tensor parameters (TFLite's "same scale in and out");
3. ``Q(op(DQ(a), DQ(b), ...))`` -> ``op(a, b, ...)``: an op whose every input is dequantized
   and whose only reader is a QuantizeLinear becomes the integer op producing the
   QuantizeLinear's output (fused clamps stay as attributes);
4. ``Q(DQ(x))`` -> ``x`` when the parameters and dtype agree, else an int -> int requantize;
5. ``Q(Move(y))`` -> ``Move(Q(y))`` for a per-tensor QuantizeLinear after a Reshape /
   Transpose / Flatten / Squeeze / Unsqueeze / Identity of a float tensor read by nothing
   else: the move only reorders elements, so both give the same integers, and the Q now
   directly follows ``y``'s producer for rule 3 (a 1-channel head Conv whose NCHW
   transpose the layout pass wrote as a Reshape).

DQ nodes left without readers are removed. Ops whose inputs are not all dequantized stay
float between their DQ / Q nodes (mixed precision), and so do ops the integer reference
refuses (checked by :func:`qdq_to_quantized`).
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import UnsupportedError
from ..ir import DType, Graph, Node, Value, precision, verify
from ..reference.int_kernels import get_int_kernel  # the integer kernels decide what is supported
from .permutation import permute_quant
from .pipelines import run_pipeline

DATA_MOVEMENT = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity",
                 "MaxPool", "Slice", "Pad", "Resize")
CONSTANT_MOVES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose")
log = logging.getLogger(__name__)


def _dequantized(value: Value | None) -> Value | None:
    """The integer value a DequantizeLinear turns into ``value``, or None."""
    if value is None or value.producer is None or value.producer.op != "DequantizeLinear":
        return None
    return value.producer.inputs[0]


def _swap(graph: Graph, old: Node, new_nodes: list[Node]) -> None:
    """Put ``new_nodes`` where ``old`` was (``old`` must already be detached or is detached here)."""
    position = graph.nodes.index(old)
    graph.nodes[position:position + 1] = new_nodes
    if old.inputs or old.outputs:
        old.detach()


def _moved_constant(graph: Graph, node: Node, source: Value) -> Value | None:
    """``source`` (integer weights) moved by ``node``, with its parameters moved too."""
    quant = source.quant
    # integer weights read by a DequantizeLinear: a constant with its QuantParams (the caller checks)
    assert source.const is not None and quant is not None
    if node.op == "Transpose":
        perm = node.attrs["perm"]
        return Value.constant(graph.unique_name(f"{source.name}_t"),
                              np.ascontiguousarray(source.const.transpose(perm)),
                              quant=permute_quant(quant, perm))
    out_shape = node.outputs[0].shape
    if quant.axis is not None and (quant.axis % source.rank != 0 or out_shape[0] != source.shape[0]):
        return None
    return Value.constant(graph.unique_name(f"{source.name}_r"), source.const.reshape(out_shape),
                          quant=quant)


def _fold_weight_move(graph: Graph, node: Node) -> bool:
    source = _dequantized(node.inputs[0])
    if node.op not in CONSTANT_MOVES or source is None or source.const is None:
        return False
    moved = _moved_constant(graph, node, source)
    if moved is None:
        return False
    output = node.outputs[0]
    node.detach()
    dequantize = Node("DequantizeLinear", graph.unique_name(f"{node.name}_dq", node=True), [moved], [output])
    _swap(graph, node, [dequantize])
    return True


def _sink_dequantize(graph: Graph, node: Node) -> bool:
    source = _dequantized(node.inputs[0])
    if (node.op not in DATA_MOVEMENT or source is None or source.const is not None
            or source.quant is None or source.quant.axis is not None or len(node.outputs) != 1
            or any(v is not None and v.const is None for v in node.inputs[1:])):
        return False
    output = node.outputs[0]
    integer = Value(graph.unique_name(f"{output.name}_q"), source.dtype, output.shape,
                    quant=source.quant, layout=output.layout)
    attrs, name = dict(node.attrs), node.name
    node.detach()
    moved = Node(node.op, name, [source], [integer], attrs)
    dequantize = Node("DequantizeLinear", graph.unique_name(f"{name}_dq", node=True), [integer], [output])
    _swap(graph, node, [moved, dequantize])
    return True


def _fuse_into_integer(graph: Graph, node: Node) -> bool:
    if node.op in ("QuantizeLinear", "DequantizeLinear") or len(node.outputs) != 1:
        return False
    output = node.outputs[0]
    if len(output.uses) != 1 or output in graph.outputs or output.uses[0][0].op != "QuantizeLinear":
        return False
    quantize = output.uses[0][0]
    sources = [None if v is None else _dequantized(v) for v in node.inputs]
    if any(v is not None and s is None for v, s in zip(node.inputs, sources)):
        return False
    target = quantize.outputs[0]
    assert sources[0] is not None  # input 0 is required, and each present input has a source
    if sources[0].dtype != target.dtype:
        return False
    attrs, name = dict(node.attrs), node.name
    graph.nodes.remove(quantize)
    quantize.detach()
    node.detach()
    _swap(graph, node, [Node(node.op, name, sources, [target], attrs)])
    return True


def _requantize_pair(graph: Graph, node: Node) -> bool:
    source = _dequantized(node.inputs[0]) if node.op == "QuantizeLinear" else None
    if source is None or source.const is not None:
        return False
    target = node.outputs[0]
    if source.dtype == target.dtype and source.quant == target.quant and target not in graph.outputs:
        graph.replace_all_uses(target, source)
        graph.nodes.remove(node)
        node.detach()
    else:
        attrs, name = dict(node.attrs), node.name
        node.detach()
        _swap(graph, node, [Node("QuantizeLinear", name, [source], [target], attrs)])
    return True


def _remove_dead_dequantize(graph: Graph) -> bool:
    dead = [n for n in graph.nodes if n.op == "DequantizeLinear" and not n.outputs[0].uses
            and n.outputs[0] not in graph.outputs]
    for node in dead:
        graph.remove_node(node)
    return bool(dead)


def _hoist_quantize(graph: Graph, node: Node) -> bool:
    """Rule 5 of the module docstring."""
    move = node.inputs[0].producer if node.op == "QuantizeLinear" else None
    target = node.outputs[0]
    if (move is None or move.op not in CONSTANT_MOVES + ("Identity",) or len(move.outputs) != 1
            or not move.inputs[0].dtype.is_float or move.inputs[0].const is not None
            or len(move.outputs[0].uses) != 1 or move.outputs[0] in graph.outputs
            or target.quant is None or target.quant.per_channel):
        return False
    source = move.inputs[0]
    integer = Value(graph.unique_name(f"{source.name}_q"), target.dtype, source.shape,
                    quant=target.quant, layout=source.layout)
    quantize_attrs, move_attrs = dict(node.attrs), dict(move.attrs)
    graph.nodes.remove(node)
    node.detach()
    move.detach()
    _swap(graph, move, [Node("QuantizeLinear", node.name, [source], [integer], quantize_attrs),
                        Node(move.op, move.name, [integer], [target], move_attrs)])
    return True


REWRITES = (_fold_weight_move, _sink_dequantize, _requantize_pair, _fuse_into_integer, _hoist_quantize)


class QdqToQuantized:
    name = "qdq_to_quantized"
    requires = "cleanup pipeline ran on an imported ONNX QDQ graph (DQ of constants kept)"
    ensures = ("every op whose inputs were all dequantized and whose output was quantized is an "
               "integer op on the quantized values; no DequantizeLinear without readers")

    def run(self, graph: Graph) -> bool:
        changed_any = False
        changed = True
        while changed:
            changed = False
            for node in list(graph.nodes):
                if node not in graph.nodes:
                    continue
                for rewrite in REWRITES:
                    if rewrite(graph, node):
                        changed = True
                        break
            changed |= _remove_dead_dequantize(graph)
            changed_any |= changed
        graph.toposort()
        return changed_any


def _back_to_float(graph: Graph, node: Node) -> None:
    """Undo rewrite 3 for ``node``: DQ its integer inputs, run it in float, Q its output."""
    target, attrs, name = node.outputs[0], dict(node.attrs), node.name
    inputs = list(node.inputs)
    node.detach()
    new_nodes: list[Node] = []
    float_inputs: list[Value | None] = []
    for value in inputs:
        if value is None or not (value.dtype.is_integer and value.quant is not None):
            float_inputs.append(value)
            continue
        real = Value(graph.unique_name(f"{value.name}_float"), DType.FLOAT32, value.shape,
                     layout=value.layout)
        new_nodes.append(Node("DequantizeLinear", graph.unique_name(f"{name}_dq", node=True),
                              [value], [real]))
        float_inputs.append(real)
    result = Value(graph.unique_name(f"{target.name}_float"), DType.FLOAT32, target.shape,
                   layout=target.layout)
    new_nodes.append(Node(node.op, name, float_inputs, [result], attrs))
    new_nodes.append(Node("QuantizeLinear", graph.unique_name(f"{name}_q", node=True), [result],
                          [target], {"to": target.dtype.value}))
    _swap(graph, node, new_nodes)


def qdq_to_quantized(graph: Graph, *, pipeline: str = "cleanup") -> Graph:
    """Run ``pipeline`` then :class:`QdqToQuantized` on ``graph`` in place; returns it verified.

    Integer nodes the integer reference refuses (e.g. a Softmax whose output scale is
    onnxruntime's 1/255 instead of TFLite's fixed 1/256) are put back in float between a
    DequantizeLinear and a QuantizeLinear, with a warning naming them.
    """
    run_pipeline(graph, pipeline)
    QdqToQuantized().run(graph)
    for node in list(graph.nodes):
        if node.op in ("QuantizeLinear", "DequantizeLinear") or not any(
                v.dtype.is_integer and v.quant is not None for v in node.outputs):
            continue
        try:
            get_int_kernel(node.op).prepare(node)
        except UnsupportedError as err:
            log.warning("node %r stays float: %s", node.name, err)
            _back_to_float(graph, node)
    verify(graph)
    return graph


def to_integer_graph(graph: Graph) -> Graph:
    """A QDQ graph as an integer (or mixed) graph: a converted copy, ``graph`` is unchanged;
    :class:`UnsupportedError` when no QuantizeLinear / DequantizeLinear group could become
    an integer op."""
    converted = qdq_to_quantized(graph.copy())
    if precision(converted) == "qdq":
        name = graph.metadata.get("path", graph.name)
        raise UnsupportedError(f"{name}: no QuantizeLinear / DequantizeLinear group could become an "
                               "integer op; use --engine float for the QDQ simulation")
    return converted

