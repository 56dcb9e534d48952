"""The optimisation ladder of the search stage: from minimal options up to the project's, one
kind of optimisation at a time.

    steps = ladder(project_options)      # [Step("minimal", ...), ..., Step("project options", ...)]

The procedure the deployment guides teach: compile at minimal optimisation first (it shows the
model goes through at all), then raise the optimisation step by step, and keep the last
configuration that passed as the fallback. The steps (each keeps the project's memory,
target, weights and mapping settings, which are constraints, not optimisations):

1. ``minimal`` - file order, no in-place / overlap / concat reuse, reference kernels, no
   tiling, no split (:func:`minimal_options`);
2. ``memory-aware order`` - the project's schedule;
3. ``buffer reuse`` - the project's reuse, overlap and concat-in-place;
4. ``fast kernels`` - the project's kernel variants;
5. ``project options`` - everything the project asks for (tiling, split, ...).

A step equal to the one before it is left out. With ``[search] enabled`` the option search
(:func:`mcudeploy.search.run_search`, the search of issue 8) runs from the project's options,
never varying the options the project file sets, and its best configuration is one more
step, ``search`` (:func:`search_step`); the search is imported only then, so a deploy
without it does not depend on it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from ..errors import UsageError
from ..options import DeploymentOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    name: str
    options: DeploymentOptions
    raises: str                      # what this step switches on


def minimal_options(options: DeploymentOptions) -> DeploymentOptions:
    """``options`` with every optimisation off (module docstring, step 1)."""
    return replace(options, schedule="file", reuse=False, overlap=False, concat_in_place=False,
                   kernels="reference", tiling_regions=(), tiling_auto=False, split_points=(), split_auto=False)


def ladder(options: DeploymentOptions) -> list[Step]:
    """The steps from minimal to ``options`` (module docstring)."""
    minimal = minimal_options(options)
    order = replace(minimal, schedule=options.schedule)
    reuse = replace(order, reuse=options.reuse, overlap=options.overlap, concat_in_place=options.concat_in_place)
    kernels = replace(reuse, kernels=options.kernels)
    candidates = [Step("minimal", minimal, "file order, no reuse, reference kernels"),
                  Step("memory-aware order", order, f"schedule {options.schedule}"),
                  Step("buffer reuse", reuse, "in-place / overlap / concat reuse"),
                  Step("fast kernels", kernels, f"kernel variants {options.kernels}"),
                  Step("project options", options, "the project's options (tiling, split, ...)")]
    steps = [candidates[0]]
    for step in candidates[1:]:
        if step.options != steps[-1].options:
            steps.append(step)
    return steps


def search_step(graph, options: DeploymentOptions, settings: dict, locked: frozenset[str]) -> Step | None:
    """The option search's best configuration as a step, or None (search off, or nothing
    passed: then a warning names the search's what-if fixes)."""
    if not settings["enabled"]:
        return None
    try:
        from ..search import SearchRequest, run_search
    except ImportError as error:
        raise UsageError(f"[search] enabled = true, but the option search cannot be imported ({error})") from None
    result = run_search(graph, SearchRequest(options=options, locked=locked, objective=settings["objective"],
                                             budget=settings["budget"]))
    if not result.found:
        fixes = "; ".join(fix.title for fix in result.fixes[:3]) or "none verified"
        log.warning("the option search found no passing configuration in %d trial(s); what-if fixes: %s",
                    len(result.trials), fixes)
        return None
    best_options = result.best_options()
    assert best_options is not None and result.best is not None  # found: there is a best trial
    return Step("search", best_options, f"the option search ({settings['objective']}, "
                f"trial {result.best.index} of {len(result.trials)})")
