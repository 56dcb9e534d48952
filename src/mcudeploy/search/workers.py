"""Running trials in parallel: worker processes that load the graph once and evaluate
configurations.

    runner = TrialRunner(setup, jobs);  trials = runner.run(configs);  runner.close()

``jobs > 1``: a :class:`concurrent.futures.ProcessPoolExecutor` whose initializer loads the
model (or receives the graph) once per worker; the configurations of one batch are mapped
over the workers and the trials come back **in the order of the batch**, so the result of a
search does not depend on ``jobs``. ``jobs == 1``: the same code in this process. The
evaluator is the back end's: :func:`.trial.evaluate` (mcudeploy's pipeline) or
:func:`.vela.evaluate_vela` (Arm's Vela compiler).
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..driver import load_graph
from ..errors import UsageError
from .reasons import Constraints
from .space import options_for
from .trial import Trial, evaluate

MCUDEPLOY, VELA = "mcudeploy", "vela"
_STATE: dict[str, Any] = {}


@dataclass
class WorkerSetup:
    """What every worker needs: the model (a path, or a graph), the target, the base options,
    the constraints and the back end."""
    target: Any
    base: Any
    constraints: Constraints
    model: str | None = None
    input_shapes: dict | None = None
    graph: Any = None
    backend: str = MCUDEPLOY
    vela: Any = None                         # search.vela.VelaSetup for the Vela back end
    extra: dict = field(default_factory=dict)


def initialise(setup: WorkerSetup) -> None:
    """Load the graph once in this process (the worker initializer)."""
    _STATE["setup"] = setup
    if setup.backend == MCUDEPLOY:
        if setup.graph is not None:
            _STATE["graph"] = setup.graph
        else:
            assert setup.model is not None  # a worker gets a graph or a model file
            _STATE["graph"] = load_graph(setup.model, input_shapes=setup.input_shapes)


def run_config(config: dict[str, Any]) -> Trial:
    """One trial of ``config`` with this process's setup."""
    setup: WorkerSetup = _STATE["setup"]
    if setup.backend == VELA:
        from .vela import evaluate_vela  # the only module that runs Vela
        return evaluate_vela(setup.vela, config, setup.constraints)
    try:
        options = options_for(setup.base, config)
    except UsageError as err:
        from .reasons import unsupported
        return Trial(dict(config), "FAIL", [unsupported(err)])
    return evaluate(_STATE["graph"], setup.target, options, setup.constraints, config)[1]


def _ready(_: int) -> bool:
    return True


class TrialRunner:
    """Evaluates batches of configurations, in worker processes or in this one."""

    def __init__(self, setup: WorkerSetup, jobs: int = 1) -> None:
        if jobs < 1:
            raise UsageError(f"-j {jobs}: give at least one worker process")
        self.jobs = jobs
        initialise(setup)                 # this process evaluates too (bisection, fixes)
        self.pool = None
        if jobs > 1:
            context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() \
                else multiprocessing.get_context()
            self.pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=initialise, initargs=(setup,))
            list(self.pool.map(_ready, range(jobs)))      # start the workers before any heavy work

    def run(self, configs: list[dict[str, Any]]) -> Iterator[Trial]:
        """The trials of ``configs``, in their order, each as soon as it and those before it
        are done (so the log keeps every finished trial if a later one stops the search)."""
        if self.pool is None or len(configs) == 1:
            return (run_config(config) for config in configs)
        return self.pool.map(run_config, configs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
