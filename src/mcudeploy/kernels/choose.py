"""Choose the kernel variant of every node: the plan's decision, made once, with a reason.

Input: a graph, an optional target (its core decides what runs) and a preference
(``"auto"``, ``"arena"``, ``"fastest"``: the highest-ranked variant the core runs and that
accepts the node; ``"reference"``: the portable kernels everywhere). The first three differ
in the plan only: the driver then moves nodes whose fast variant costs arena back to the
reference kernel (``"arena"`` always, ``"auto"`` as few as make the deployment fit;
:mod:`mcudeploy.plan.variant_arena`). Output: a :class:`KernelSelection`
(one :class:`KernelChoice` per node) that the planner asks for scratch bytes and reuse
rules (overlap, strided output), the estimator for costs, and the code generator for the
function to call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..ir import Graph, Node, Value
from ..options import KERNEL_PREFERENCES
from .catalogue import variant_named, variants_for
from .overlap import overlap_distance as reference_distance
from .reference import REFERENCE
from .strided_output import strided_output_refusal
from .variant import KernelVariant

if TYPE_CHECKING:
    from ..targets import Target


@dataclass(frozen=True)
class KernelChoice:
    """The variant chosen for one node, with the reason."""
    node: str
    op: str
    variant: str
    reason: str


class KernelSelection:
    """The chosen variant of each node, and what it allows (scratch, overlap)."""

    def __init__(self, choices: dict[str, KernelChoice], variants: dict[str, KernelVariant]) -> None:
        self.choices = choices
        self._variants = variants

    def variant(self, node: Node) -> KernelVariant:
        return self._variants.get(node.name, REFERENCE)

    def scratch_bytes(self, node: Node) -> int:
        return int(self.variant(node).scratch_bytes(node))

    def overlap_distance(self, node: Node, value: Value) -> int | str:
        """How far below ``value`` the node's output may start, as the chosen variant allows."""
        variant = self.variant(node)
        if variant.overlap == "none":
            return f"kernel variant {variant.name} does not allow overlap"
        if variant.overlap == "proved":
            assert variant.overlap_proof is not None  # KernelVariant checks that they go together
            return variant.overlap_proof(node, value)
        distance = reference_distance(node, value)
        if variant.overlap == "in-place" and distance != 0:
            return f"kernel variant {variant.name} allows full in-place reuse only"
        return distance

    def strided_output_refusal(self, node: Node) -> str | None:
        """None when the chosen variant writes ``node``'s output with an out c_stride
        (:mod:`.strided_output`), else why not."""
        return strided_output_refusal(self.variant(node).name, node)

    def counts(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for choice in self.choices.values():
            totals[choice.variant] = totals.get(choice.variant, 0) + 1
        return totals

    def to_json(self) -> dict:
        return {name: {"variant": c.variant, "reason": c.reason} for name, c in self.choices.items()}

    def with_variants(self, changes: dict[str, tuple[KernelVariant, str]]) -> KernelSelection:
        """This selection with the nodes of ``changes`` (node -> (variant, reason)) replaced."""
        choices, variants = dict(self.choices), dict(self._variants)
        for name, (variant, reason) in changes.items():
            choices[name] = KernelChoice(name, choices[name].op, variant.name, reason)
            variants[name] = variant
        return KernelSelection(choices, variants)


def _choose(node: Node, core, preference: str) -> tuple[KernelVariant, str]:
    if preference not in KERNEL_PREFERENCES:
        raise UsageError(f"kernel variants {preference!r}: choose one of {', '.join(KERNEL_PREFERENCES)}")
    if preference == "reference":
        return REFERENCE, "reference kernels requested (kernels.variant = reference)"
    skipped = []
    for variant in variants_for(node.op):
        if variant is REFERENCE:
            break
        if core is None or not variant.runs_on(core):
            skipped.append(f"{variant.name} needs {variant.core_requirement}")
            continue
        refusal = variant.accepts(node)
        if refusal:
            skipped.append(f"{variant.name}: {refusal}")
            continue
        return variant, f"{variant.name}: fastest variant for {node.op} on {core.name}"
    why = "; ".join(skipped) if skipped else f"no optimised variant for {node.op}"
    return REFERENCE, f"reference ({why})"


def choose_kernels(graph: Graph, target: Target | None = None, preference: str = "auto",
                   forced: dict[str, str] | None = None) -> KernelSelection:
    """The variant of every node (module docstring); ``forced`` maps node -> variant name."""
    core = target.core if target is not None else None
    choices, variants = {}, {}
    for node in graph.nodes:
        if forced and node.name in forced:
            variant = variant_named(node.op, forced[node.name])
            reason = f"{variant.name}: forced"
        else:
            variant, reason = _choose(node, core, preference)
        choices[node.name] = KernelChoice(node.name, node.op, variant.name, reason)
        variants[node.name] = variant
    return KernelSelection(choices, variants)
