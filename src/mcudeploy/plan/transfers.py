"""Transfers: the copies between the on-chip arena and the external one (graph split).

Input: the nodes in execution order, the proved reuses (:mod:`.reuse`) and the names of the
tensors that live in the external arena. Output: one :class:`Transfer` per node that only
moves bytes across the two arenas - a view op (Identity & co.) or a contiguous Slice (whole
rows of an NHWC tensor) whose input and output are in different arenas, so it could not be
an alias. The code generator calls the user-replaceable ``network_copy(destination, source,
bytes)`` hook for each (``memcpy`` by default, a DMA driver on a board) instead of a kernel:

    destination = its output's address,  source = its input's address + source_offset

A Slice across the arenas that is not one contiguous range runs its kernel instead, reading
the external memory in place (memory-mapped PSRAM); so does one whose output is a channel
slice of a concatenation done in place (``channel_stride``: one contiguous copy would
overwrite the other inputs' channels; the kernel writes one run per pixel).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Node
from .reuse import VIEW_OPS, ReuseSet, contiguous_slice_offset

LOAD, STORE = "load", "store"


@dataclass(frozen=True)
class Transfer:
    """A copy between memory regions the plan needs."""
    node: str
    source: str            # tensor read
    source_offset: int     # bytes into the source
    destination: str       # tensor written (whole)
    bytes: int
    direction: str         # load (external -> on chip) | store (on chip -> external)


def find_transfers(nodes: list[Node], reuse: ReuseSet, external: frozenset[str]) -> dict[str, Transfer]:
    """Every transfer node (module docstring), by node name."""
    transfers = {}
    for node in nodes:
        if node.op not in (*VIEW_OPS, "Slice") or node.name in reuse.elided or not node.inputs:
            continue
        source, output = node.inputs[0], node.outputs[0]
        alias = reuse.aliases.get(output.name)
        if (alias is not None and alias.base == source.name) or not reuse.crosses(source.name, output.name):
            continue
        if alias is not None and alias.channel_stride:
            continue                     # written into its concat's channel slice by the kernel
        offset = contiguous_slice_offset(node) if node.op == "Slice" else 0
        if offset is None:
            continue
        direction = LOAD if source.name in external else STORE
        transfers[node.name] = Transfer(node.name, source.name, offset, output.name, output.nbytes, direction)
    return transfers
