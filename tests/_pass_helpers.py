"""Helpers shared by the ``test_pass_*.py`` files: run a pass on a copy, compare numbers."""
from __future__ import annotations

from collections import Counter
from typing import Callable

import numpy as np

from mcudeploy.ir import Graph, verify
from mcudeploy.passes import run_passes
from mcudeploy.reference import run_float

RTOL, ATOL = 1e-4, 1e-5


def op_counts(graph: Graph) -> Counter:
    return Counter(node.op for node in graph.nodes)


def random_feeds(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {v.name: rng.standard_normal(v.shape).astype(v.dtype.numpy) for v in graph.inputs}


def apply(graph: Graph, *passes) -> tuple[Graph, list[str]]:
    """Run ``passes`` (verifying after each) on ``graph`` in place; return an untouched copy
    of the graph as it was before, and the names of the passes that changed it."""
    verify(graph)
    before = graph.copy()
    changed = run_passes(graph, passes, verify_each=True)
    return before, changed


def assert_same_function(before: Graph, after: Graph, *, seed: int = 0,
                         feed_map: Callable[[str, np.ndarray], np.ndarray] | None = None,
                         output_map: Callable[[str, np.ndarray], np.ndarray] | None = None,
                         rtol: float = RTOL, atol: float = ATOL) -> None:
    """``run_float`` of both graphs agrees on seeded random inputs, output by output name.

    ``feed_map`` / ``output_map`` convert the *before* graph's arrays into the *after*
    graph's layout (used when a pass changes graph input / output layouts)."""
    feeds = random_feeds(before, seed)
    expected = run_float(before, feeds)
    after_feeds = {k: (feed_map(k, v) if feed_map else v) for k, v in feeds.items()}
    actual = run_float(after, after_feeds)
    assert [v.name for v in after.outputs] == [v.name for v in before.outputs]
    for name, want in expected.items():
        want = output_map(name, want) if output_map else want
        np.testing.assert_allclose(actual[name], want, rtol=rtol, atol=atol, err_msg=name)
