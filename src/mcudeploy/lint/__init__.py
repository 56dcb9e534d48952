"""Deployment lint: what in a model will hurt on a given target, and how to fix it.

:func:`lint_graph` runs every rule of :data:`RULES` (registered in :mod:`.rules_graph` and
:mod:`.rules_target`) on a graph mapped to a target and returns a :class:`LintReport`:
findings sorted by severity (error, warning, info) then graph order, and the NPU offload
rates of the mapping. ``mcudeploy lint`` exits with 1 when a finding reaches the
``--fail-on`` severity (``error`` by default), else 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..errors import UsageError
from ..ir import Graph
from ..mapping import Mapping, map_graph
from ..targets import Target
from . import rules_graph, rules_target  # noqa: F401  (register the rules)
from .context import LintContext
from .findings import RULES, SEVERITIES, Finding, Rule, rule

if TYPE_CHECKING:
    from ..deployment import Deployment


@dataclass
class LintReport:
    model: str
    target: Target
    mapping: Mapping
    findings: list[Finding]

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def fails(self, threshold: str) -> bool:
        """Whether a finding is at least as severe as ``threshold`` (``never``: never fails)."""
        if threshold == "never":
            return False
        limit = SEVERITIES.index(threshold)
        return any(f.rank <= limit for f in self.findings)


def lint_graph(graph: Graph, target: Target, *, force_cpu: Iterable[str] = (),
               rules: Iterable[str] | None = None, source: Graph | None = None,
               mapping: Mapping | None = None, executor: str = "vendor-npu") -> LintReport:
    """Run the lint ``rules`` (all by default) on ``graph`` (as deployed) for ``target``;
    ``source`` is the model as imported (default: ``graph``), ``mapping`` what the target's
    NPU could take (default: mapped here), ``executor`` who runs the generated code's nodes
    (default: the NPU's view; with ``mcudeploy`` the NPU findings are information: they say
    what ``vendor-npu`` would meet)."""
    mapping = mapping if mapping is not None else map_graph(graph, target, force_cpu)
    context = LintContext(graph, target, mapping, source, executor=executor)
    names = list(RULES) if rules is None else list(rules)
    unknown = [name for name in names if name not in RULES]
    if unknown:
        raise UsageError(f"unknown lint rule(s) {', '.join(unknown)}; rules are "
                         f"{', '.join(RULES)}")
    selected = [RULES[name] for name in names]
    findings = [finding for entry in selected for finding in entry.check(context)]
    position = {name: index for index, name in enumerate(context.order)}
    input_names = {v.name for v in [*graph.inputs, *context.source_graph.inputs]}
    findings.sort(key=lambda f: (f.rank, -1 if f.node in input_names or f.node is None
                                 else position.get(f.node, len(position)), f.rule))
    name = str(context.source_graph.metadata.get("path", graph.name))
    return LintReport(name, target, mapping, findings)



def lint_deployment(deployment: Deployment, source: Graph, *, rules: Iterable[str] | None = None) -> LintReport:
    """Lint a :class:`~mcudeploy.deployment.Deployment` (its graph, target, the NPU's mapping
    and its executor) with ``source``, the model as imported."""
    if deployment.target is None or deployment.mapping is None:
        raise UsageError("lint needs a target (--target NAME)")
    return lint_graph(deployment.graph, deployment.target, rules=rules, source=source,
                      mapping=deployment.npu_mapping or deployment.mapping, executor=deployment.executor)


__all__ = ["Finding", "LintContext", "LintReport", "RULES", "Rule", "SEVERITIES", "lint_deployment",
           "lint_graph", "rule"]
