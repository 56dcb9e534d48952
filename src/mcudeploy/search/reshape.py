"""Rebuild a graph with new input shapes or new constants: the what-if fixes' model changes.

    rebuild(graph, input_shapes=None, constants=None) -> Graph

Every node is added again in order through ``Graph.add_node``, so shape inference recomputes
every tensor from the new inputs; names, attributes, quantization parameters and layouts stay.
Two attributes that hold shapes are recomputed rather than kept:

* ``Resize``'s ``sizes``: each axis keeps its scale, ``new size = new input x (old size /
  old input)`` (a whole ratio, as U-Net up-sampling has);
* ``Reshape``'s ``shape`` when it only moves axes of size 1 (a 1-channel NCHW <-> NHWC
  relayout): the input's other dimensions, in order.

Anything else that fixes a size - a Reshape / Flatten into a fully connected head, a Slice, a
pooling window that covered the whole map - makes the rebuilt graph inconsistent, and
:class:`~mcudeploy.errors.UnsupportedError` names the node: a fixed-size head forbids a
resolution change. ``constants`` (name -> array) replaces constant arrays (padded weights);
their quantization parameters come with them when given as ``(array, QuantParams)``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GraphError, UnsupportedError
from ..ir import Graph, Value, verify


def _unit_free(shape) -> list[int]:
    return [d for d in shape if d != 1]


def _attrs(node, inputs: list[Value | None]) -> dict[str, Any]:
    attrs = dict(node.attrs)
    source = node.inputs[0] if node.inputs else None
    if source is None or inputs[0] is None:
        return attrs
    old, new = source.shape, inputs[0].shape
    if node.op == "Resize" and old != new:
        sizes = []
        for old_in, new_in, old_out in zip(old, new, attrs["sizes"]):
            if old_out % old_in:
                raise UnsupportedError(f"node {node.name!r} (Resize): scale {old_out}/{old_in} is not a whole "
                                       "number; cannot resize this model's input")
            sizes.append(new_in * (old_out // old_in))
        attrs["sizes"] = sizes
    if node.op == "Reshape" and old != new:
        target = list(attrs["shape"])
        if _unit_free(target) != _unit_free(old):
            raise UnsupportedError(f"node {node.name!r} (Reshape to {target}): a fixed-size shape forbids a "
                                   "resolution change (a fully connected head?)")
        dims = iter(_unit_free(new))
        attrs["shape"] = [d if d == 1 else next(dims) for d in target]
    return attrs


def _twin(graph: Graph, value: Value, constants: dict) -> Value:
    replacement = constants.get(value.name)
    if replacement is None:
        return Value(value.name, value.dtype, value.shape, const=value.const, quant=value.quant,
                     layout=value.layout, origin=value.origin)
    array, quant = replacement if isinstance(replacement, tuple) else (replacement, value.quant)
    return Value(value.name, value.dtype, np.asarray(array).shape, const=np.asarray(array, dtype=value.dtype.numpy),
                 quant=quant, layout=value.layout, origin=value.origin)


def rebuild(graph: Graph, input_shapes: dict[str, tuple[int, ...]] | None = None,
            constants: dict[str, Any] | None = None) -> Graph:
    """``graph`` rebuilt (module docstring); the original is not changed."""
    input_shapes, constants = input_shapes or {}, constants or {}
    unknown = set(input_shapes) - {v.name for v in graph.inputs}
    if unknown:
        raise UnsupportedError(f"no graph input {', '.join(sorted(unknown))}; inputs are "
                               f"{', '.join(v.name for v in graph.inputs)}")
    new = Graph(graph.name)
    new.metadata = dict(graph.metadata)
    mapping: dict[int, Value] = {}
    for value in graph.inputs:
        mapping[id(value)] = new.add_input(value.name, value.dtype, tuple(input_shapes.get(value.name, value.shape)),
                                           quant=value.quant, layout=value.layout)
        mapping[id(value)].origin = value.origin
    for node in graph.nodes:
        inputs: list[Value | None] = []
        for value in node.inputs:
            if value is not None and id(value) not in mapping:
                mapping[id(value)] = _twin(new, value, constants)
                new._claim(value.name)
            inputs.append(None if value is None else mapping[id(value)])
        try:
            added = new.add_node(node.op, inputs, _attrs(node, inputs), name=node.name,
                                 output_names=[v.name for v in node.outputs])
        except GraphError as err:
            raise UnsupportedError(f"node {node.name!r} ({node.op}) does not take the changed shapes: {err}. "
                                   "A fixed-size layer forbids this change") from None
        for old, value in zip(node.outputs, added.outputs):
            value.quant, value.layout, value.origin = old.quant, old.layout, old.origin
            mapping[id(old)] = value
    new.outputs = [mapping[id(v)] for v in graph.outputs]
    verify(new)
    return new


def spatial_input(graph: Graph) -> tuple[Value, int, int] | None:
    """The one rank-4 image input and its (H axis, W axis), or None (not an image model)."""
    images = [v for v in graph.inputs if v.rank == 4]
    if len(images) != 1 or len(graph.inputs) != 1:
        return None
    value = images[0]
    layout = value.layout or ("NCHW" if value.shape[1] <= 4 and value.shape[3] > 4 else "NHWC")
    return (value, 2, 3) if layout == "NCHW" else (value, 1, 2)
