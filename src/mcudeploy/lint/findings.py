"""Lint findings and the rule registry.

A rule is a function ``(context) -> Iterable[Finding]`` registered with ``@rule(name)``;
it looks at one deployment hazard of a graph on a target. A :class:`Finding` says *what*
(``message``, naming the node or tensor and the numbers), *why it hurts on this target*
(``why``) and *what to do* (``fix``), with a ``severity``:

* ``error``: the model cannot be deployed as it is on this target (e.g. a tensor larger
  than every memory that could hold it);
* ``warning``: it deploys, but slower or bigger than it needs to be;
* ``info``: worth knowing, often deliberate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from .context import LintContext

SEVERITIES = ("error", "warning", "info")
"""Most to least severe."""


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    node: str | None          # node (or, for graph inputs, tensor) name; None: whole model
    message: str
    why: str
    fix: str

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)


RuleFn = Callable[["LintContext"], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    name: str
    summary: str
    check: RuleFn


RULES: dict[str, Rule] = {}


def rule(name: str, summary: str) -> Callable[[RuleFn], RuleFn]:
    """Register ``check`` as lint rule ``name`` (``summary``: one line for ``--list-rules``)."""
    def register(check: RuleFn) -> RuleFn:
        if name in RULES:
            raise RuntimeError(f"lint rule {name} registered twice")
        RULES[name] = Rule(name, summary, check)
        return check
    return register
