"""The pass contract.

A pass is an object with

* ``name`` — short identifier used in logs and ``--passes`` options;
* ``requires`` — one sentence: what must hold of the graph before it runs;
* ``ensures`` — one sentence: what holds after it ran;
* ``run(graph) -> bool`` — rewrites ``graph`` in place, returns whether anything changed;
* optionally ``check_requires(graph)`` / ``check_ensures(graph)`` — the two sentences as
  code: ``None`` when they hold, else what does not. :func:`run_passes` checks them around
  ``run`` (with ``verify_each``), so a pass that leaves its own job half done is caught.

Passes never mutate constant arrays in place (see :mod:`mcudeploy.ir.graph`) and keep
``graph.nodes`` topologically ordered. :func:`run_passes` runs a list in order and, with
``verify=True`` (tests, ``driver``), runs the IR verifier after each pass so that a broken
invariant is blamed on the pass that broke it.
"""
from __future__ import annotations

import logging
from typing import Iterable, Protocol

from ..errors import GraphError
from ..ir import Graph, verify

log = logging.getLogger(__name__)


class Pass(Protocol):
    name: str
    requires: str
    ensures: str

    def run(self, graph: Graph) -> bool: ...


def run_passes(graph: Graph, passes: Iterable[Pass], *, verify_each: bool = True) -> list[str]:
    """Run ``passes`` in order on ``graph``; return the names of those that changed it."""
    changed: list[str] = []
    for p in passes:
        if verify_each:
            _check(p, "check_requires", graph, "before")
        if p.run(graph):
            changed.append(p.name)
            log.debug("pass %s changed %s (%d nodes)", p.name, graph.name, len(graph.nodes))
        if verify_each:
            try:
                verify(graph)
            except GraphError as err:
                raise GraphError(f"after pass {p.name}: {err}") from None
            _check(p, "check_ensures", graph, "after")
    return changed


def _check(p: Pass, method: str, graph: Graph, when: str) -> None:
    """Run the pass's optional ``check_requires`` / ``check_ensures``; a failure is a bug of the
    pipeline (requires) or of the pass (ensures): :class:`GraphError` naming both."""
    check = getattr(p, method, None)
    problem = check(graph) if check is not None else None
    if problem:
        sentence = p.requires if method == "check_requires" else p.ensures
        raise GraphError(f"{when} pass {p.name} ({sentence!r}): {problem}")
