"""How a node's chosen kernel variant plans differently from the reference kernel.

Input: a node and a :class:`~.choose.KernelSelection`. Output: the differences, one sentence
each (empty when the variant plans exactly like the reference kernel, so it cannot change the
arena). The planner reads three things of a variant (:mod:`mcudeploy.plan.memory_plan`):

    scratch(node)                    bytes alive at the node's step only
    overlap_distance(node, input)    how far below each data input the output may start
                                     (a refusal = no overlap reuse)
    strided_output_refusal(node)     whether it writes a channel slice of an in-place concat

A variant whose three answers equal the reference kernel's is planned identically; any other
may cost arena (or not: only :mod:`mcudeploy.plan.variant_arena`'s plans say), and these
sentences are the rule named with the bytes it cost. Generic over variants: nothing here
names one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir import Node
from .overlap import overlap_distance as reference_distance
from .reference import REFERENCE
from .strided_output import strided_output_refusal

if TYPE_CHECKING:
    from .choose import KernelSelection


def _input_text(value) -> str:
    """An input by its producer's name (TFLite's fused tensor names run to hundreds of characters)."""
    return f"the output of {value.producer.name}" if value.producer is not None else value.name


def _overlap_difference(node: Node, selection: KernelSelection) -> list[str]:
    differences = []
    for value in node.inputs:
        if value is None or value.const is not None:
            continue
        fast, reference = selection.overlap_distance(node, value), reference_distance(node, value)
        if fast == reference or isinstance(reference, str):
            continue        # equal, or the reference kernel cannot overlap either
        if isinstance(fast, str):
            differences.append(f"overlap with {_input_text(value)} refused ({fast}) where the reference "
                               f"kernel allows distance {reference} B")
        elif fast > reference:
            differences.append(f"overlap with {_input_text(value)} needs distance {fast} B, the reference "
                               f"kernel {reference} B")
    return differences


def planning_differences(node: Node, selection: KernelSelection) -> list[str]:
    """Every rule by which ``node``'s chosen variant plans differently from the reference
    kernel (module docstring); [] for the reference variant itself."""
    variant = selection.variant(node)
    if variant is REFERENCE:
        return []
    differences = []
    scratch, reference_scratch = selection.scratch_bytes(node), int(REFERENCE.scratch_bytes(node))
    if scratch > reference_scratch:
        differences.append(f"scratch {scratch} B (reference kernel {reference_scratch} B)")
    differences += _overlap_difference(node, selection)
    if selection.strided_output_refusal(node) and strided_output_refusal(REFERENCE.name, node) is None:
        differences.append("no strided output (the reference kernel writes a concat's channel slice)")
    return differences
