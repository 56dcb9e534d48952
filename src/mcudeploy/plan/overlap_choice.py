"""Which of a variant's safe overlap distances the plan uses, per node: the smaller arena wins.

    choose_proofs(graph, selection, plan, planner) -> (selection, plan)

Input: a kernel selection whose variants may offer ``overlap_alternatives`` (other safe
proofs, :class:`~mcudeploy.kernels.KernelVariant`), its plan and ``planner(selection) ->
MemoryPlan``. Output: the selection with one proof per such node, and its plan.

Every proof is safe, and the pair-aware allocator (:mod:`.paired_greedy`) is not monotone in
the distances (the most permissive proof can pack worse), so the rule is searched: every node
on its main proof (the given plan), every node on its first alternative, the smaller of the two
kept; then, largest MACC first, each node switched to its other options, kept when the arena
shrinks. At most :data:`MAX_TRIALS` plans. The variant (kernel, scratch, layouts) never
changes, only the distance the planner is given.
"""
from __future__ import annotations

from ..ir import Graph, Node, get_op
from ..kernels import KernelSelection, KernelVariant
from ..kernels.catalogue import variant_named
from .memory_plan import MemoryPlan

MAX_TRIALS = 32


def proof_options(node: Node, selection: KernelSelection) -> list[KernelVariant]:
    """The node's variant on each of its safe proofs (main proof first); [] when it has no
    alternative."""
    base = variant_named(node.op, selection.choices[node.name].variant)
    if not base.overlap_alternatives:
        return []
    return [base, *(base.with_alternative(index) for index in range(len(base.overlap_alternatives)))]


def choose_proofs(graph: Graph, selection: KernelSelection, plan: MemoryPlan, planner) -> tuple[KernelSelection, MemoryPlan]:
    """The distance rule of every node with alternatives (module docstring)."""
    options = {node.name: proof_options(node, selection) for node in graph.nodes}
    nodes = sorted((node for node in graph.nodes if options[node.name]), key=lambda n: -int(get_op(n.op).macc(n)))
    if not nodes:
        return selection, plan

    def using(base: KernelSelection, name: str, variant: KernelVariant) -> KernelSelection:
        return base.with_variants({name: (variant, base.choices[name].reason)})
    other = selection
    for node in nodes:
        other = using(other, node.name, options[node.name][1])
    other_plan = planner(other)
    if other_plan.arena_bytes < plan.arena_bytes:
        selection, plan = other, other_plan
    trials = 1
    for node in nodes:
        for variant in options[node.name]:
            if trials >= MAX_TRIALS or selection.variant(node) == variant:
                continue
            trial = using(selection, node.name, variant)
            trial_plan = planner(trial)
            trials += 1
            if trial_plan.arena_bytes < plan.arena_bytes:
                selection, plan = trial, trial_plan
    return selection, plan
