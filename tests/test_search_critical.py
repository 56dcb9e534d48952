"""On every shared full-integer model and a few targets: the search's best configuration is
never worse than the defaults, and the critical SRAM limit it reports is exact - the limit
PASSes and one byte less FAILs, both checked by fresh deployments outside the search."""
from __future__ import annotations

import pytest

from conftest import INT8_MODELS, shared_model
from mcudeploy.driver import deploy
from mcudeploy.errors import UsageError
from mcudeploy.search import SearchRequest, run_search
from mcudeploy.search.pareto import objective_key

TARGETS = ["stm32h743", "stm32f746", "stm32n6"]


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", INT8_MODELS)
def test_best_is_never_worse_and_the_critical_limit_is_exact(name, target):
    model = shared_model(name)
    # tiling is locked off: its automatic trials take seconds each, and the limit is what is tested
    result = run_search(model, SearchRequest(target=target, budget=10, locked=frozenset({"tiling_auto", "split_auto"})))
    default, best = result.default, result.best
    assert default.passed and best is not None
    assert objective_key(best, "memory")[:-1] <= objective_key(default, "memory")[:-1]
    limit = result.critical.passing
    options = result.best_options()
    assert deploy(model, options.with_values(sram_limit=limit)).fits
    if limit > 0:      # one byte less: does not fit, or (a graph split's arena) cannot be placed at all
        try:
            assert not deploy(model, options.with_values(sram_limit=limit - 1)).fits
        except UsageError as error:
            assert "fits no on-chip region" in str(error)
    assert result.critical.failing == limit - 1


def test_a_bisection_stopped_by_the_time_keeps_its_bracket():
    """boundary(stop=...): asked before each halving; the bracket so far, both ends run, not exact."""
    from types import SimpleNamespace

    from mcudeploy.search.critical import boundary
    runs = []
    def run(value):
        runs.append(value)
        return SimpleNamespace(passed=value >= 700)
    found = boundary(range(0, 1001), run, stop=lambda: len(runs) >= 4)
    assert not found.exact and len(runs) == 4
    assert found.passing >= 700 > found.failing and found.passing - found.failing > 1
    assert found.passing in runs and found.failing in runs
    exact = boundary(range(0, 1001), lambda v: SimpleNamespace(passed=v >= 700))
    assert exact.exact and (exact.passing, exact.failing) == (700, 699)
