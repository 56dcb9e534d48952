"""The search stage: compile options tried through the real pipeline, with a trial log.

    run_search(model, SearchRequest(target=..., objective="memory" | "latency" | "balanced",
               budget=..., jobs=...)) -> SearchResult

Each trial is one configuration of the option space (:mod:`.space`) run through
:func:`mcudeploy.driver.deploy` and the estimator (:mod:`.trial`), PASS or FAIL with every
named reason (:mod:`.reasons`); the search (:mod:`.engine`) prunes with bounds
(:mod:`.bounds`), bisects critical limits (:mod:`.critical`), keeps the Pareto front
(:mod:`.pareto`), runs trials in worker processes (:mod:`.workers`) and, when nothing
passes, verifies what-if fixes (:mod:`.fixes`). Arm's Vela compiler is a second back end
(:mod:`.vela`, the only module that runs it).
"""
from .engine import run_search
from .reasons import CODES, Constraints, Reason
from .records import Fix, SearchRequest, SearchResult
from .space import KNOB_NAMES, build_space, load_space_file
from .trial import Metrics, Trial

__all__ = ["CODES", "Constraints", "Fix", "KNOB_NAMES", "Metrics", "Reason", "SearchRequest", "SearchResult",
           "Trial", "build_space", "load_space_file", "run_search"]
