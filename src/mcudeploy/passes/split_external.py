"""Graph split as a graph rewrite: named tensors live in external memory, reached by copies.

Input: a graph and the names of the tensors to spill (chosen by
:mod:`mcudeploy.plan.split`: the tensors that cross a cut). Output: the same graph where
each spilled tensor ``T``

* is written by a *store*: its producer writes an on-chip ``T@local`` and an ``Identity``
  copies it to ``T`` - or, when ``T`` is the H-Concat of a tiled region
  (:mod:`.tile_spatial`), each tile is stored into its slice of ``T`` as soon as it is
  computed (the Concat is then done in place in the external arena);
* is read through *loads*: a contiguous row Slice (a tile's stripe) copies its rows on
  chip by itself; any other reader gets an ``Identity`` copy ``T@load`` just before it.

A graph input or output may be spilled too (the application's buffers then live off chip).
The arithmetic is untouched (copies only), so the split graph is bit-exact. The names of
every tensor of the external arena are in :attr:`SpillTensors.external`; the planner places
them apart and the code generator turns each copy into a ``network_copy`` call
(:mod:`mcudeploy.plan.transfers`).
"""
from __future__ import annotations

import logging

from ..errors import UsageError
from ..ir import Graph, Node, Value

log = logging.getLogger(__name__)


def _value_by_name(graph: Graph, name: str) -> Value:
    for value in graph.values():
        if value.name == name and not value.is_constant:
            return value
    raise UsageError(f"graph split: no tensor {name!r} in the graph as deployed")


def _tile_concat(value: Value) -> bool:
    """True when ``value`` is the H-Concat of node outputs (a tiled region's tiles)."""
    producer = value.producer
    return (producer is not None and producer.op == "Concat" and value.rank == 4 and value.shape[0] == 1
            and producer.attrs["axis"] % 4 == 1 and all(v.producer is not None for v in producer.inputs))


def _store(graph: Graph, value: Value, external: set[str]) -> None:
    producer = value.producer
    if producer is None:
        return                                   # a graph input: the application writes it there
    if _tile_concat(value):
        for index, piece in enumerate(producer.inputs):
            assert piece.producer is not None  # _tile_concat checked it
            store = graph.add_node("Identity", [piece], name=f"{piece.producer.name}@store",
                                   output_names=[f"{piece.name}@external"], after=piece.producer)
            copy = store.outputs[0]
            copy.quant, copy.layout, copy.origin = piece.quant, piece.layout, piece.display_name
            producer.set_input(index, copy)
            external.add(copy.name)
        return
    # the producer writes an on-chip copy; an Identity moves it to the spilled name
    on_chip = Value(graph.unique_name(f"{value.name}@local"), value.dtype, value.shape, quant=value.quant,
                    layout=value.layout, origin=value.display_name)
    producer.replace_output(list(producer.outputs).index(value), on_chip)
    graph.add_node("Identity", [on_chip], name=f"{producer.name}@store", outputs=[value], after=producer)


def _loads(graph: Graph, value: Value) -> None:
    for reader in value.users:
        if reader.op == "Slice":
            continue                              # a tile's stripe copies its rows by itself
        load = graph.add_node("Identity", [value], name=f"{value.name}@load:{reader.name}",
                              output_names=[f"{value.name}@load"], before=reader)
        copy = load.outputs[0]
        copy.quant, copy.layout, copy.origin = value.quant, value.layout, value.display_name
        for node, index in list(value.uses):
            if node is reader:
                reader.set_input(index, copy)


class SpillTensors:
    """The pass (module docstring); ``external`` holds the external arena's tensor names."""
    name = "split_external"
    requires = "the spilled tensors exist and are not constants"
    ensures = "every spilled tensor is written by one store and read by loads or row Slices only"

    def __init__(self, tensors: tuple[str, ...] | list[str]) -> None:
        self.tensors = tuple(tensors)
        self.external: set[str] = set()

    def run(self, graph: Graph) -> bool:
        self.external = set()
        for name in self.tensors:
            value = _value_by_name(graph, name)
            self.external.add(value.name)
            _store(graph, value, self.external)
            _loads(graph, value)
        log.debug("graph split: %d tensors spilled, external arena %s", len(self.tensors), sorted(self.external))
        return bool(self.tensors)

    def check_ensures(self, graph: Graph) -> str | None:
        for node in graph.nodes:
            for value in node.inputs:
                if value is not None and value.name in self.external and not _reads_external(node):
                    return f"node {node.name!r} ({node.op}) reads the spilled {value.name!r} directly"
        return None


def _reads_external(node: Node) -> bool:
    return node.op in ("Identity", "Slice", "Concat")
