"""The IR graph: inputs, outputs, and nodes kept in a valid execution (topological) order.

Invariants (checked by :func:`mcudeploy.ir.verify.verify`):

* ``nodes`` is a topological order: every node input is a graph input, a constant, or
  the output of an earlier node. Passes that insert nodes use ``add_node(..., before=...)``
  or call :meth:`Graph.toposort` afterwards.
* Node names are unique, value names are unique.
* Every graph output is produced by a node or is a graph input.
* Constant arrays are never modified in place: a pass that changes weights makes a new
  array and a new constant value. That makes :meth:`Graph.copy` cheap (arrays are shared).

``metadata`` holds facts about the source (format, file, opset, producer) for reports.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Iterable, Iterator

import numpy as np

from ..errors import GraphError
from .dtypes import DType
from .node import Node
from .quant import QuantParams
from .registry import get_op, infer_types
from .value import Value


class Graph:
    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        self.metadata: dict[str, Any] = {}
        self._value_names: set[str] = set()
        self._node_names: set[str] = set()
        self._counter = itertools.count()

    # -- naming -----------------------------------------------------------------------
    def unique_name(self, base: str, *, node: bool = False) -> str:
        """``base`` if no value (or, with ``node=True``, no node) uses it yet, else
        ``base_<n>``; the name is reserved. Nodes and values have separate namespaces, as in ONNX."""
        taken = self._node_names if node else self._value_names
        name = base
        while name in taken:
            name = f"{base}_{next(self._counter)}"
        taken.add(name)
        return name

    def _claim(self, name: str, *, node: bool = False) -> None:
        (self._node_names if node else self._value_names).add(name)

    # -- building ---------------------------------------------------------------------
    def add_input(self, name: str, dtype: DType, shape: tuple[int, ...], *,
                  quant: QuantParams | None = None, layout: str | None = None) -> Value:
        value = Value(self.unique_name(name), dtype, shape, quant=quant, layout=layout)
        self.inputs.append(value)
        return value

    def add_constant(self, name: str, array: np.ndarray, *, quant: QuantParams | None = None) -> Value:
        """A new constant value (not attached to any node until used)."""
        return Value.constant(self.unique_name(name), np.asarray(array), quant=quant)

    def add_node(self, op: str, inputs: Iterable[Value | None], attrs: dict[str, Any] | None = None,
                 *, name: str | None = None, outputs: Iterable[Value] | int | None = None,
                 output_names: Iterable[str] | None = None, before: Node | None = None,
                 after: Node | None = None) -> Node:
        """Create a node and insert it (at the end, or ``before`` / ``after`` a node).

        Without explicit ``outputs`` the output values are created from shape inference
        (``outputs`` may then be the output count, for ops with a variable count) and named
        from ``output_names`` or the node name.
        """
        inputs = list(inputs)
        node_name = self.unique_name(name or op, node=True)
        normalized = get_op(op).normalize_attrs(attrs or {}, node_name=node_name)
        if outputs is None or isinstance(outputs, int):
            try:
                types = infer_types(op, inputs, normalized)
            except ValueError as err:
                raise GraphError(f"node {node_name!r} ({op}): {err}") from None
            names = list(output_names) if output_names is not None else (
                [node_name] if len(types) == 1 else [f"{node_name}:{i}" for i in range(len(types))])
            outputs = [Value(self.unique_name(n), t.dtype, t.shape) for n, t in zip(names, types)]
        else:
            outputs = list(outputs)
            for value in outputs:
                self._claim(value.name)
        node = Node(op, node_name, inputs, outputs, normalized)
        if before is not None:
            self.nodes.insert(self.nodes.index(before), node)
        elif after is not None:
            self.nodes.insert(self.nodes.index(after) + 1, node)
        else:
            self.nodes.append(node)
        return node

    def remove_node(self, node: Node) -> None:
        """Remove a node whose outputs are no longer used (redirect them first)."""
        for value in node.outputs:
            if value.uses or value in self.outputs:
                raise GraphError(f"cannot remove node {node.name!r}: its output {value.name!r} is "
                                 "still used; redirect its uses first")
        self.nodes.remove(node)
        node.detach()

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of ``old`` (nodes and graph outputs) read ``new`` instead."""
        for node, index in list(old.uses):
            node.set_input(index, new)
        self.outputs = [new if v is old else v for v in self.outputs]

    # -- queries ----------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def values(self) -> list[Value]:
        """Every value of the graph (inputs, constants, node outputs), each once, in order."""
        seen: dict[int, Value] = {}
        for value in self.inputs:
            seen.setdefault(id(value), value)
        for node in self.nodes:
            for value in itertools.chain(node.inputs, node.outputs):
                if value is not None:
                    seen.setdefault(id(value), value)
        for value in self.outputs:
            seen.setdefault(id(value), value)
        return list(seen.values())

    def constants(self) -> list[Value]:
        return [v for v in self.values() if v.is_constant]

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self.nodes))

    def __len__(self) -> int:
        return len(self.nodes)

    # -- order ------------------------------------------------------------------------
    def toposort(self) -> None:
        """Reorder ``nodes`` topologically, keeping the current order where it is already
        valid (stable Kahn). Raises :class:`GraphError` naming the nodes on a cycle."""
        position = {id(n): i for i, n in enumerate(self.nodes)}
        predecessors = {id(n): {id(v.producer) for v in n.inputs
                                if v is not None and v.producer is not None} for n in self.nodes}
        successors: dict[int, list[Node]] = {id(n): [] for n in self.nodes}
        for node in self.nodes:
            for pred in predecessors[id(node)]:
                if pred in successors:
                    successors[pred].append(node)
        waiting = {key: len(preds & successors.keys()) for key, preds in predecessors.items()}
        ready = [(position[id(n)], n) for n in self.nodes if waiting[id(n)] == 0]
        heapq.heapify(ready)
        order: list[Node] = []
        while ready:
            _, node = heapq.heappop(ready)
            order.append(node)
            for user in successors[id(node)]:
                waiting[id(user)] -= 1
                if waiting[id(user)] == 0:
                    heapq.heappush(ready, (position[id(user)], user))
        if len(order) != len(self.nodes):
            stuck = [n.name for n in self.nodes if waiting[id(n)] > 0]
            raise GraphError(f"graph {self.name!r} has a cycle through node(s): "
                             f"{', '.join(stuck[:10])}")
        self.nodes = order

    # -- copying ----------------------------------------------------------------------
    def copy(self) -> "Graph":
        """A structural copy: new nodes and values, constant arrays shared (never mutated)."""
        clone = Graph(self.name)
        clone.metadata = dict(self.metadata)
        mapping: dict[int, Value] = {}

        def twin(value: Value) -> Value:
            if id(value) not in mapping:
                new = Value(value.name, value.dtype, value.shape, const=value.const,
                            quant=value.quant, layout=value.layout, origin=value.origin)
                clone._claim(value.name)
                mapping[id(value)] = new
            return mapping[id(value)]

        clone.inputs = [twin(v) for v in self.inputs]
        for node in self.nodes:
            clone._claim(node.name, node=True)
            clone.nodes.append(Node(node.op, node.name,
                                    [None if v is None else twin(v) for v in node.inputs],
                                    [twin(v) for v in node.outputs], dict(node.attrs)))
        clone.outputs = [twin(v) for v in self.outputs]
        return clone

    def __repr__(self) -> str:
        return f"<Graph {self.name!r}: {len(self.nodes)} nodes>"
