"""Order the nodes of an ONNX graph topologically (stable Kahn) and report cycles.

ONNX requires graphs to be sorted, but exporters and hand-edited files get it wrong; the
importer sorts itself so that only a real cycle is an error (``GraphError`` naming the
nodes that cannot be scheduled).
"""
from __future__ import annotations

import heapq
from pathlib import Path

import onnx

from ...errors import GraphError


def _on_cycles(successors: list[list[int]], waiting: list[int]) -> list[int]:
    """Nodes left unscheduled, minus those merely downstream of a cycle (pruned as sinks)."""
    stuck = {i for i, count in enumerate(waiting) if count > 0}
    while True:
        sinks = {i for i in stuck if not any(s in stuck for s in successors[i])}
        if not sinks:
            return sorted(stuck)
        stuck -= sinks


def sort_nodes(path: Path, graph: onnx.GraphProto) -> None:
    """Reorder ``graph.node`` in place so every node follows the producers of its inputs."""
    nodes = list(graph.node)
    producer: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            if name in producer:
                raise GraphError(f"{path}: tensor {name!r} is produced by two nodes, "
                                 f"{nodes[producer[name]].name!r} and {node.name!r}")
            producer[name] = index
    successors: list[list[int]] = [[] for _ in nodes]
    waiting = [0] * len(nodes)
    for index, node in enumerate(nodes):
        for pred in {producer[name] for name in node.input if name in producer}:
            successors[pred].append(index)
            waiting[index] += 1
    ready = [index for index in range(len(nodes)) if waiting[index] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for user in successors[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(nodes):
        stuck = [nodes[i].name for i in _on_cycles(successors, waiting)]
        raise GraphError(f"{path}: the graph has a cycle through node(s) "
                         f"{', '.join(repr(n) for n in stuck[:10])}"
                         f"{' ...' if len(stuck) > 10 else ''}; a model must be acyclic")
    if order != list(range(len(nodes))):
        ordered = [onnx.NodeProto() for _ in order]
        for copy, index in zip(ordered, order):
            copy.CopyFrom(nodes[index])
        del graph.node[:]
        graph.node.extend(ordered)
