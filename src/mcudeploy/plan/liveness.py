"""Liveness: an IR graph and an execution order -> one record per tensor the arena must hold.

Input: a :class:`~mcudeploy.ir.Graph`, an order (node names, a topological order of its
nodes), the alignment, whether graph inputs / outputs live in the arena, and an optional
``scratch_bytes(node) -> int`` callback (im2col, NPU work buffer). Output: :class:`TensorLife`
records and their :class:`~mcudeploy.plan.buffers.Buffer` form for the allocators.

Steps are positions in the order. A tensor produced at step p and last read at step q is
alive over ``[p, q]`` (Buffer interval ``[p, q + 1)``):

* graph inputs are written by the application before step 0: first step 0;
* graph outputs are read by the application after the last step: last step n - 1;
* an output nobody reads is still written: alive at its producer's step only;
* a node's scratch buffer is alive at that node's step only;
* constants (weights) are never in the activation arena; with ``io_in_arena=False`` graph
  inputs and outputs are owned by the application and are not either.

Sizes are ``value.nbytes``; the allocators round them up to the alignment (``packed_size``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import GraphError
from ..ir import Graph, Node, Value
from .buffers import Buffer

ScratchFunction = Callable[[Node], int]
SCRATCH_SUFFIX = ":scratch"

KIND_INPUT, KIND_OUTPUT, KIND_ACTIVATION, KIND_SCRATCH = "input", "output", "activation", "scratch"


@dataclass(frozen=True)
class TensorLife:
    """One tensor of the arena: ``size`` bytes alive from ``first_step`` to ``last_step`` inclusive."""

    name: str
    size: int
    first_step: int
    last_step: int
    kind: str = KIND_ACTIVATION
    node: str | None = None          # the node owning a scratch buffer

    def buffer(self, alignment: int) -> Buffer:
        return Buffer(self.name, self.size, self.first_step, self.last_step + 1, alignment)


def scratch_name(node_name: str) -> str:
    """``<node>:scratch``, the name of a node's scratch buffer."""
    return node_name + SCRATCH_SUFFIX


def ordered_nodes(graph: Graph, order: list[str] | None) -> list[Node]:
    """The graph's nodes in ``order`` (default: the graph's own order), checked topological."""
    if order is None:
        return list(graph.nodes)
    by_name = {node.name: node for node in graph.nodes}
    if sorted(order) != sorted(by_name):
        raise GraphError(f"execution order for graph {graph.name!r} does not list every node "
                         f"exactly once ({len(order)} names for {len(by_name)} nodes)")
    nodes = [by_name[name] for name in order]
    seen: set[int] = set()
    for node in nodes:
        for value in node.inputs:
            if value is not None and value.producer is not None and id(value.producer) not in seen:
                raise GraphError(f"execution order runs node {node.name!r} before "
                                 f"{value.producer.name!r}, which produces its input {value.name!r}")
        seen.add(id(node))
    return nodes


def in_arena(value: Value, graph: Graph, io_in_arena: bool) -> bool:
    """True for the values the activation arena holds (see the module docstring)."""
    if value.is_constant:
        return False
    if io_in_arena:
        return True
    return not (any(value is v for v in graph.inputs) or any(value is v for v in graph.outputs))


def tensor_lives(graph: Graph, order: list[str] | None = None, *, io_in_arena: bool = True,
                 scratch_bytes: ScratchFunction | None = None) -> list[TensorLife]:
    """Every arena tensor with its size and lifetime (graph inputs first, then in step order)."""
    nodes = ordered_nodes(graph, order)
    last = len(nodes) - 1
    first: dict[str, int] = {}
    final: dict[str, int] = {}
    values: dict[str, Value] = {}
    for value in graph.inputs:
        first[value.name], final[value.name], values[value.name] = 0, 0, value
    for step, node in enumerate(nodes):
        for value in node.inputs:
            if value is not None and value.name in first:
                final[value.name] = max(final[value.name], step)
        for value in node.outputs:
            first[value.name], final[value.name], values[value.name] = step, step, value
    for value in graph.outputs:
        if value.name in final:
            final[value.name] = max(last, 0)
    lives = [TensorLife(name, values[name].nbytes, first[name], final[name], _kind(values[name], graph))
             for name in first if in_arena(values[name], graph, io_in_arena)]
    if scratch_bytes is not None:
        for step, node in enumerate(nodes):
            size = int(scratch_bytes(node))
            if size > 0:
                lives.append(TensorLife(scratch_name(node.name), size, step, step, KIND_SCRATCH, node.name))
    return lives


def _kind(value: Value, graph: Graph) -> str:
    if any(value is v for v in graph.inputs):
        return KIND_INPUT
    if any(value is v for v in graph.outputs):
        return KIND_OUTPUT
    return KIND_ACTIVATION


def to_buffers(lives: list[TensorLife], alignment: int) -> list[Buffer]:
    """The allocator records: interval ``[first_step, last_step + 1)``, the given alignment."""
    return [life.buffer(alignment) for life in lives]
