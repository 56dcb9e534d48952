"""Fast kernels at no arena cost: which nodes keep their fast kernel variant, decided by plans.

    choose_for_arena(graph, fastest, preference, planner) -> VariantArena

Input: the graph, the fastest selection (:func:`~mcudeploy.kernels.choose_kernels`), the
preference (``kernels.variant``), and ``planner(selection) -> MemoryPlan`` (the deployment's
own :func:`~.memory_plan.plan_memory` keywords). Output: :class:`VariantArena`, the selection
the deployment runs (codegen, estimate and plan read the same one), its plan, and the
decision in words (``plan`` prints :meth:`VariantArena.lines`).

A variant plans differently from the reference kernel only through its scratch bytes, its
overlap rule and its strided output (:func:`~mcudeploy.kernels.planning_rules.planning_differences`);
a node whose variant answers those like the reference kernel is *free*, any other *costly*.
Scratch is an arena buffer alive at its node's step only (:mod:`.liveness`), so a costly
node's scratch may well sit in dead space: only a plan says whether it costs bytes.

1. plan F, the fastest selection, each variant's safe overlap distance chosen per node
   (:mod:`.overlap_choice`: the allocator is not monotone in the distances). No costly node:
   F is kept;
2. plan R, the reference kernels everywhere. F <= R, or the preference is ``auto`` /
   ``fastest``: F is kept, and the decision states ``F - R`` with the rules of the costly
   nodes (``auto``: the driver keeps F while the deployment fits, else asks for ``arena``);
3. ``arena``: plan M, every costly node on the reference kernel (free nodes answer like the
   reference kernel or more permissively, so M is R's problem or an easier one); then,
   largest MACC first, each costly node goes back to its fast variant (on the safe overlap
   distance that packs smallest) when the plan with it stays at ``arena <= R``; a node that would raise it stays on the reference kernel, and
   the decision names it with the arena it would have made and its rule (the driver, when
   ``auto``'s fast variants do not fit, asks for ``arena`` with "the deployment fits" as the
   test instead of ``arena <= R``: only as many nodes fall back as the fit needs). At most
   :data:`MAX_TRIALS` such plans (the rest stay on the reference kernel, said so). Should M
   itself exceed R (the allocator is a heuristic), the reference kernels run everywhere.

So with ``arena``, ``arena(plan) <= arena(reference kernels)`` by construction.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..ir import Graph, get_op
from ..kernels import REFERENCE, KernelSelection
from ..kernels.planning_rules import planning_differences
from .memory_plan import MemoryPlan
from .overlap_choice import choose_proofs, proof_options

logger = logging.getLogger(__name__)
MAX_TRIALS = 32
Planner = Callable[[KernelSelection], MemoryPlan]
KEPT_RULES = {"auto": "kernels.variant = auto: the deployment fits", "fastest": "kernels.variant = fastest",
              "arena": "arena <= the reference kernels'", "fits": "the deployment fits (kernels.variant = auto)"}


@dataclass(frozen=True)
class CostlyNode:
    """A node whose fast variant plans differently from the reference kernel."""
    node: str
    variant: str                  # the fast variant
    rules: tuple[str, ...]        # planning_differences, in words
    kept: bool                    # runs the fast variant in the deployment
    arena_with_it: int | None     # the arena of the trial plan with this node fast (None: not tried)


@dataclass
class VariantArena:
    """The kernel selection a deployment runs and why, in arena bytes (module docstring)."""
    selection: KernelSelection
    plan: MemoryPlan
    preference: str
    fastest_arena: int
    # the reference kernels' arena: None when not planned (no costly node); a function when only
    # the decision's words need it (``auto`` / ``fastest`` keep F whatever R is), planned when first
    # read: a search trial reads neither, and R is a whole plan (9 s of a U-Net 512 levels trial)
    reference: int | Callable[[], int] | None
    costly: list[CostlyNode] = field(default_factory=list)
    untried: list[str] = field(default_factory=list)
    rule: str = ""                              # what accepted the kept fast variants' arena

    @property
    def reference_arena(self) -> int | None:
        if callable(self.reference):
            self.reference = self.reference()
        return self.reference

    def __getstate__(self) -> dict:
        """Pickled (a sweep's workers) with R planned: the function is the planner's closure."""
        return {**self.__dict__, "reference": self.reference_arena}

    @property
    def fallbacks(self) -> list[CostlyNode]:
        return [c for c in self.costly if not c.kept]

    def lines(self) -> list[str]:
        """The decision as ``plan`` prints it (one short line each): what fell back and why,
        what the kept fast variants cost over the reference kernels and the rule that accepted it."""
        arena = self.plan.arena_bytes
        if not self.costly:
            return ["kernel variants: every fast variant plans like the reference kernel (no arena cost)"]
        lines = [f"kernel variants: arena {arena} B; with the reference kernels {self.reference_arena} B, "
                 f"with every fast variant {self.fastest_arena} B"]
        if self.reference_arena is not None and arena > self.reference_arena:
            lines.append(f"kernel variants: the fast variants cost {arena - self.reference_arena} B, accepted by "
                         f"'{self.rule}' (kernels.variant = arena keeps the reference kernels' arena, slower)")
        else:
            lines.append(f"kernel variants: the fast variants cost no arena ({len(self.costly) - len(self.fallbacks)} "
                         "with their own scratch / overlap rules fit the dead space)")
        if self.fallbacks:
            lines.append(f"kernel variants: {len(self.fallbacks)} node(s) fell back to the reference kernel "
                         f"(rule: '{self.rule}'; kernels.variant = fastest keeps them fast)")
        for costly in self.costly:
            if costly.kept:
                lines.append(f"kernel variant {costly.variant} of {costly.node}: {', '.join(costly.rules)}")
            elif costly.arena_with_it is None:
                lines.append(f"fell back: {costly.node}: {costly.variant} not tried (more than {MAX_TRIALS} costly "
                             "nodes)")
            else:
                lines.append(f"fell back: {costly.node}: {costly.variant} would make the arena {costly.arena_with_it} B "
                             f"(+{costly.arena_with_it - arena} B): {', '.join(costly.rules)}")
        return lines

    def to_json(self) -> dict:
        return {"preference": self.preference, "arena_bytes": self.plan.arena_bytes,
                "fastest_arena_bytes": self.fastest_arena, "reference_arena_bytes": self.reference_arena,
                "rule": self.rule, "costly": [vars(c) for c in self.costly]}


def _fallback(selection: KernelSelection, names: list[str], reason: str) -> KernelSelection:
    return selection.with_variants({name: (REFERENCE, reason) for name in names})


def choose_for_arena(graph: Graph, fastest: KernelSelection, preference: str, planner: Planner,
                     fits: Callable[[KernelSelection, MemoryPlan], bool] | None = None) -> VariantArena:
    """The selection and plan of ``graph`` under ``preference`` (module docstring); ``fits``
    (with ``arena``): the test a restored node's plan must pass instead of ``arena <= R`` (the
    driver's "the deployment fits", so that only as many nodes fall back as the fit needs)."""
    fastest, fastest_plan = choose_proofs(graph, fastest, planner(fastest), planner)
    rules = {node.name: tuple(planning_differences(node, fastest)) for node in graph.nodes}
    costly = [node for node in graph.nodes if rules[node.name]]

    def record(node, kept: bool, arena: int | None = None) -> CostlyNode:
        return CostlyNode(node.name, fastest.choices[node.name].variant, rules[node.name], kept, arena)
    if not costly:
        return VariantArena(fastest, fastest_plan, preference, fastest_plan.arena_bytes, None)
    everywhere = _fallback(fastest, [n.name for n in graph.nodes], "reference: no variant keeps the arena at the "
                                                                     "reference kernels' (plan/variant_arena.py)")
    kept = [record(node, True) for node in costly]
    if preference != "arena":
        return VariantArena(fastest, fastest_plan, preference, fastest_plan.arena_bytes,
                            lambda: planner(everywhere).arena_bytes, kept, rule=KEPT_RULES.get(preference, preference))
    reference_plan = planner(everywhere)
    if fastest_plan.arena_bytes <= reference_plan.arena_bytes:
        return VariantArena(fastest, fastest_plan, preference, fastest_plan.arena_bytes, reference_plan.arena_bytes,
                            kept, rule=KEPT_RULES.get(preference, preference))
    mixed = _fallback(fastest, [n.name for n in costly], "reference: its fast variant costs arena")
    mixed_plan = planner(mixed)
    if mixed_plan.arena_bytes > reference_plan.arena_bytes:
        return VariantArena(everywhere, reference_plan, preference, fastest_plan.arena_bytes,
                            reference_plan.arena_bytes, [record(node, False) for node in costly])
    reference = reference_plan.arena_bytes
    accepts = fits if fits is not None else (lambda selection, plan: plan.arena_bytes <= reference)
    selection, plan, decided, untried = _restore(costly, fastest, (mixed, mixed_plan), accepts, planner, record)
    return VariantArena(selection, plan, preference, fastest_plan.arena_bytes, reference, decided, untried,
                        rule=KEPT_RULES["fits" if fits is not None else "arena"])


def _macc(node) -> int:
    return int(get_op(node.op).macc(node))


def _restore(costly, fastest: KernelSelection, start: tuple[KernelSelection, MemoryPlan],
             accepts: Callable[[KernelSelection, MemoryPlan], bool], planner: Planner,
             record) -> tuple[KernelSelection, MemoryPlan, list[CostlyNode], list[str]]:
    """Step 3 of the module docstring: costly nodes back on their fast variant, largest MACC
    first, while ``accepts`` their plan. Returns (selection, plan, costly records, untried)."""
    selection, plan = start
    decided: dict[str, CostlyNode] = {}
    for index, node in enumerate(sorted(costly, key=lambda node: -_macc(node))):
        if index >= MAX_TRIALS:
            decided[node.name] = record(node, False)
            continue
        smallest: tuple[KernelSelection, MemoryPlan] | None = None
        for variant in proof_options(node, fastest) or [fastest.variant(node)]:   # each safe distance
            trial = selection.with_variants({node.name: (variant, fastest.choices[node.name].reason)})
            trial_plan = planner(trial)
            if smallest is None or trial_plan.arena_bytes < smallest[1].arena_bytes:
                smallest = trial, trial_plan
        assert smallest is not None          # at least one variant was planned
        kept = accepts(*smallest)
        if kept:
            selection, plan = smallest
        decided[node.name] = record(node, kept, smallest[1].arena_bytes)
    reasons = {c.node: (REFERENCE, f"reference: {c.variant} would make the arena {c.arena_with_it} B "
                                   f"({', '.join(c.rules)}); kernels.variant = fastest keeps it")
               for c in decided.values() if not c.kept and c.arena_with_it is not None}
    logger.info("kernel variants: %d of %d costly nodes fell back to the reference kernel", len(reasons), len(costly))
    return (selection.with_variants(reasons), plan, [decided[node.name] for node in costly],
            [c.node for c in decided.values() if c.arena_with_it is None])
