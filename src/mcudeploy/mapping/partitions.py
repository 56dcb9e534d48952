"""Partitions: the runs of consecutive nodes on one device, in execution order, and the
sub-graph of one partition.

Input: a graph, its :class:`~.mapper.Mapping` and the execution order (the plan's). Output:
:class:`Partition` records (device, nodes, the tensors that enter and leave), and
:func:`partition_graph`, the partition as a graph of its own (its entering tensors are the
graph inputs, its leaving tensors the outputs; values keep their names, types and
quantization), which the vendor hand-off exports as a model file.

A tensor *enters* a partition when a node of it reads the tensor and no node of it produces
it (a graph input or another partition's output; constants stay inside); it *leaves* when a
node of it produces the tensor and a node outside reads it, or it is a graph output.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node, Value, verify
from .mapper import Mapping


@dataclass(frozen=True)
class Partition:
    """Consecutive nodes (execution order) that run on one device."""
    index: int
    device: str
    nodes: tuple[str, ...]
    inputs: tuple[str, ...]     # tensors that enter (module docstring)
    outputs: tuple[str, ...]    # tensors that leave

    def to_json(self) -> dict:
        return {"index": self.index, "device": self.device, "nodes": list(self.nodes),
                "inputs": list(self.inputs), "outputs": list(self.outputs)}


def partitions(graph: Graph, mapping: Mapping, order: list[str]) -> list[Partition]:
    """The runs of ``order`` on one device of ``mapping`` (module docstring)."""
    device = {p.node: p.device for p in mapping.placements}
    runs: list[list[str]] = []
    for name in order:
        if runs and device[runs[-1][0]] == device[name]:
            runs[-1].append(name)
        else:
            runs.append([name])
    return [_partition(graph, index, device[run[0]], run) for index, run in enumerate(runs)]


def _partition(graph: Graph, index: int, device: str, names: list[str]) -> Partition:
    inside = set(names)
    nodes = [graph.node(name) for name in names]
    produced = {v.name for node in nodes for v in node.outputs}
    entering: list[str] = []
    for node in nodes:
        for value in node.inputs:
            if value is not None and not value.is_constant and value.name not in produced \
                    and value.name not in entering:
                entering.append(value.name)
    outputs = {v.name for v in graph.outputs}
    leaving = [v.name for node in nodes for v in node.outputs
               if v.name in outputs or any(user.name not in inside for user in v.users)]
    return Partition(index, device, tuple(names), tuple(entering), tuple(leaving))


def partition_graph(graph: Graph, partition: Partition) -> Graph:
    """``partition`` as a graph of its own (module docstring), verified."""
    sub = Graph(f"{graph.name}_{partition.device}{partition.index}")
    sub.metadata = {**graph.metadata, "partition": partition.index}
    values: dict[str, Value] = {}

    def twin(value: Value) -> Value:
        if value.name not in values:
            values[value.name] = Value(value.name, value.dtype, value.shape, const=value.const,
                                       quant=value.quant, layout=value.layout, origin=value.origin)
            sub._claim(value.name)
        return values[value.name]

    by_name = {v.name: v for v in graph.values()}
    sub.inputs = [twin(by_name[name]) for name in partition.inputs]
    for name in partition.nodes:
        node = graph.node(name)
        sub._claim(node.name, node=True)
        sub.nodes.append(Node(node.op, node.name, [None if v is None else twin(v) for v in node.inputs],
                              [twin(v) for v in node.outputs], dict(node.attrs)))
    sub.outputs = [values[name] for name in partition.outputs]
    verify(sub)
    return sub
