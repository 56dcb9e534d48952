"""The compile-option search, end to end.

    run_search(model, SearchRequest(...)) -> SearchResult

1. **Set up**: the target (it must have a RAM region the arena may use), the graph (loaded
   once here and once per worker), the worker pool (:mod:`.workers`), the log (:mod:`.log`).
2. **Trial 0** is the base configuration - mcudeploy's defaults with every option the user
   gave. An error there is the user's (a bad option value, a region that does not exist) and
   is raised; later trials turn errors into FAIL ``UNSUPPORTED``. The space
   (:mod:`.space`) is built from it (nodes the NPU refuses become ``force_cpu`` candidates).
3. **Explore** (:mod:`.strategy`) in batches until the budget, ``EXPLORE_SHARE`` of the time
   (the rest is for step 4 or 5; a fix not started within the time says so) or the space runs
   out. With ``-j 1`` the time is checked before every trial, and a configuration whose
   expensive knob values took longer than the time left (an automatic tiling of a large model)
   is not started, and the log says so. Before a batch runs, each configuration whose plan is already known (same plan knobs
   as a trial run, :data:`.trial.PLAN_KNOBS`; never with automatic tiling or graph split, whose
   rewrites aim at the region the options allow) is checked against its pool
   (:mod:`.bounds`): when the plan's lower bound exceeds every byte the configuration lets
   the arena use, no allocator or bank split can help - it is skipped, logged as SKIP with
   the numbers, and costs no budget.
4. **Critical SRAM limit** of the best configuration, by bisection (:mod:`.critical`):
   exact, one byte less fails; a configuration that tiles or splits automatically is bisected
   with the regions and points it chose (:func:`pinned_config`).
5. **What-if fixes** when nothing passes (:mod:`.fixes`), each verified by the pipeline.

Determinism: the proposals depend on the seed and on the trials' outcomes only, batches have
a fixed size and come back in order, so ``-j`` changes the time, not the result.
"""
from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from ..driver import deployable_graph, resolve_target
from ..errors import UsageError
from ..ir import Graph
from ..plan.placement import hot_weight_budgets, slow_flash
from ..targets import Target
from .bounds import allowed_regions, arena_pool
from .critical import boundary
from .log import TrialLog, cost_note
from .pareto import best_trial, check_objective, on_chip_front, pareto_front
from .reasons import NPU_CONSTRAINT, RAM_NOFIT, Reason
from .records import SearchRequest, SearchResult
from .space import (
    KNOB_NAMES,
    SpaceContext,
    build_space,
    check_against_target,
    describe_value,
    normalise,
    options_for,
    pipeline_has,
)
from .strategy import Proposer, cheap_first
from .trial import SKIP, Trial, evaluate
from .workers import MCUDEPLOY, VELA, TrialRunner, WorkerSetup

logger = logging.getLogger(__name__)
PROPOSALS_PER_TRIAL = 50        # proposals examined (incl. pruned ones) per trial of budget
EXPLORE_SHARE = 0.6             # of --time: the rest is for the critical limit or the what-if fixes


def _check_request(request: SearchRequest) -> None:
    check_objective(request.objective)
    if request.budget is not None and request.budget < 1:
        raise UsageError(f"--budget {request.budget}: a search needs at least one trial")
    if request.time_limit is not None and not request.time_limit > 0:
        raise UsageError(f"--time {request.time_limit}: give a positive number of seconds")
    if request.budget is None and request.time_limit is None:
        raise UsageError("give a budget of trials (--budget N) or a time (--time S)")
    if request.jobs < 1:
        raise UsageError(f"-j {request.jobs}: give at least one worker process")
    if request.backend not in (MCUDEPLOY, VELA):
        raise UsageError(f"--backend {request.backend!r}: choose mcudeploy or vela")


def _target(request: SearchRequest) -> Target:
    options = request.options
    if isinstance(request.target, Target):
        target = request.target
    else:
        name = request.target if request.target is not None else options.target
        if name is None:
            raise UsageError("mcudeploy search needs a target (--target NAME or a .toml file)")
        resolved = resolve_target(options.with_values(target=str(name)))
        assert resolved is not None  # a target is named
        target = resolved
    if not allowed_regions(target, options.with_values(external_activations=True, activation_region=None)):
        raise UsageError(f"target {target.name!r} has no memory the activations may use (no writable data "
                         f"region{' the NPU reaches' if target.npu else ''}); its regions are "
                         f"{', '.join(r.name for r in target.regions) or 'none'}: add a RAM region to the target file")
    return target


def _base_config(request: SearchRequest) -> dict:
    return normalise({name: getattr(request.options, name) for name in KNOB_NAMES})


def _refused_nodes(trial: Trial) -> tuple[str, ...]:
    return tuple(sorted({r.data["node"] for r in trial.reasons if r.code == NPU_CONSTRAINT and "node" in r.data}))


class Search:
    """One run of the module docstring; :func:`run_search` is the entry point."""

    def __init__(self, model, request: SearchRequest) -> None:
        _check_request(request)
        self.request = request
        self.started = time.perf_counter()
        self.target = _target(request)
        self.base = request.options.with_values(target=self.target.name) if request.options.target is None \
            else request.options
        self.model_name = str(model.metadata.get("path", model.name)) if isinstance(model, Graph) else str(model)
        self.graph = model if isinstance(model, Graph) else None
        self.model_path = None if isinstance(model, Graph) else Path(model)
        self.trials: list[Trial] = []
        self.pruned: list[Trial] = []
        self.cells: dict[tuple, Trial] = {}
        self.log = TrialLog(request.log_path)

    # -- running trials ---------------------------------------------------------------
    def _record(self, trial: Trial, phase: str, label: str = "") -> Trial:
        trial.phase, trial.label = phase, label or trial.label
        if trial.status != SKIP:
            trial.index = len(self.trials)
            self.trials.append(trial)
            if trial.metrics is not None:
                self.cells.setdefault(trial.cell(), trial)
        else:
            self.pruned.append(trial)
        self.log.trial(trial)
        return trial

    def run_one(self, config: dict, phase: str, label: str = "") -> Trial:
        return self._record(next(iter(self.runner.run([config]))), phase, label)

    def _elapsed(self) -> float:
        return time.perf_counter() - self.started

    # -- pruning ----------------------------------------------------------------------
    def _prune(self, config: dict) -> Trial | None:
        """A SKIP trial when the plan of ``config`` is known and cannot fit (module docstring)."""
        if self.request.backend == VELA:
            return None                   # Vela plans its own memory: no plan to bound
        if config.get("tiling_auto") or config.get("split_auto") or config.get("split_levels"):
            return None                   # their rewrite aims at the region the options allow: the plan differs
        probe = Trial(config, "FAIL")
        known = self.cells.get(probe.cell())
        if known is None or known.metrics is None:
            return None
        options = options_for(self.base, config)
        metrics = known.metrics
        fixed = metrics.fixed_bytes if metrics.home_region in {r.name for r in allowed_regions(self.target, options)} \
            else 0
        pool = arena_pool(self.target, options, fixed, metrics.home_region)
        split = options.split_arena and options.activation_region is None
        if metrics.bound_bytes > pool:
            text = (f"live-set bound {metrics.bound_bytes} B > pool {pool} B "
                    f"({'all allowed banks' if split else 'largest allowed region'}): no allocator"
                    f"{' or bank split' if split else ''} can help (plan of trial {known.index})")
        elif not split and metrics.arena_bytes > pool:
            text = (f"the plan of trial {known.index} needs one arena of {metrics.arena_bytes} B; the largest "
                    f"allowed region has {pool} B")
        else:
            return None
        return Trial(dict(config), SKIP, [Reason(RAM_NOFIT, text, {"bound": metrics.bound_bytes, "pool": pool,
                                                                   "plan_of": known.index})], label="pruned")

    # -- phases -----------------------------------------------------------------------
    def first_trial(self) -> Trial:
        if self.request.backend == VELA:        # Vela's defaults on the target's system
            config = {name: values[0] for name, values in self.vela_space().values.items()}
            return self.run_one(config, "default", "defaults")
        config = _base_config(self.request)
        graph = self.graph if self.graph is not None else self.runner_graph()
        _, trial = evaluate(graph, self.target, options_for(self.base, config), self.request.constraints,
                            config, raise_errors=True)
        return self._record(trial, "default", "defaults")

    def runner_graph(self):
        from .workers import _STATE
        return _STATE["graph"]

    def explore(self, proposer: Proposer) -> None:
        request = self.request
        budget = request.budget
        examined = 0
        limit = PROPOSALS_PER_TRIAL * (budget or 10_000)
        while examined < limit:
            left = None if budget is None else budget - len(self.trials)
            if (left is not None and left <= 0) or (request.time_limit is not None
                                                     and self._elapsed() > request.time_limit * EXPLORE_SHARE):
                break
            batch = proposer.next_batch(self.trials)
            if not batch:
                break
            runnable = []
            for config in batch:
                examined += 1
                proposer.mark(config)
                skipped = self._prune(config)
                if skipped is not None:
                    self._record(skipped, "explore")
                else:
                    runnable.append(config)
            runnable = cheap_first(runnable[:left] if left is not None else runnable)
            if request.jobs > 1:
                for trial in self.runner.run(runnable):
                    self._record(trial, "explore")
            elif not self._run_within_time(runnable, proposer):
                break

    def _explore_deadline(self) -> float | None:
        limit = self.request.time_limit
        return None if limit is None else limit * EXPLORE_SHARE

    def _run_within_time(self, configs: list[dict], proposer: Proposer) -> bool:
        """Run ``configs`` one by one (``-j 1``); a configuration expected to end past the
        exploration's share of ``--time`` (the mean of the trials sharing its expensive knob
        values, :meth:`.strategy.Proposer.expensive_values`) is not started, and said. False
        when the exploration's time is spent."""
        deadline = self._explore_deadline()
        for config in configs:
            if deadline is not None and self._elapsed() > deadline:
                return False
            expected = self._expected_seconds(config, proposer)
            if deadline is not None and expected is not None and self._elapsed() + expected > deadline:
                changed = ", ".join(f"{k} = {describe_value(v)}" for k, v in sorted(config.items())
                                    if self.trials and self.trials[0].config.get(k) != v)
                self.log.note(f"not run: {{ {changed} }} would take about {expected:.0f} s, past the exploration's "
                              f"{deadline:.0f} s of --time")
                continue
            self._record(next(iter(self.runner.run([config]))), "explore")
        return True

    def _expected_seconds(self, config: dict, proposer: Proposer) -> float | None:
        expensive = [(k, v) for k, v in proposer.expensive_values(self.trials) if config.get(k) == v]
        if not expensive:
            return None
        # less what a trial kept for the next ones (the levels table, an automatic tiling: kept by
        # key), so the first levels trial of a U-Net 512 (178 s, the table) did not rule out the
        # 10-40 s ones after it
        times = [t.seconds - _reusable(t) for t in self.trials
                 if t.seconds and all(t.config.get(k) == v for k, v in expensive)]
        return sum(times) / len(times) if times else None

    def critical_limit(self, best: Trial):
        """Bisection of ``sram_limit`` for ``best`` (module docstring, step 4)."""
        on_chip = [r.size for r in self.target.regions if r.on_chip and r.writable]
        high = self.base.sram_limit if self.base.sram_limit is not None else max(on_chip, default=0)
        config = pinned_config(best)
        self.log.note(f"critical SRAM limit of trial {best.index}: bisection over sram_limit in [0, {high}] bytes"
                      + (" (its tiling / split as chosen: an automatic rewrite would choose again at every limit)"
                         if config != best.config else ""))
        return boundary(range(0, high + 1), lambda limit: self.run_one(
            {**config, "sram_limit": limit}, "bisect", f"sram_limit={limit}"),
            stop=lambda: self.out_of_time(best.seconds))

    def out_of_time(self, next_trial_seconds: float = 0.0) -> bool:
        """The time budget (``--time``) is spent, or would be by a trial of
        ``next_trial_seconds`` (a bisection step of a configuration that tiles costs about what
        its trial did): bisections stop with the bracket they have."""
        limit = self.request.time_limit
        return limit is not None and self._elapsed() + next_trial_seconds > limit

    def run(self) -> SearchResult:
        request = self.request
        setup = WorkerSetup(self.target, self.base, request.constraints,
                            model=str(self.model_path) if self.model_path else None,
                            input_shapes=request.input_shapes, graph=self.graph, backend=request.backend,
                            vela=self._vela_setup())
        self.runner, self.runner_setup = TrialRunner(setup, request.jobs), setup
        try:
            return self._run()
        finally:
            self.runner.close()
            self.log.close()
            if setup.vela is not None:
                setup.vela.ini_text = setup.vela.ini.read_text(encoding="utf-8")
                shutil.rmtree(setup.vela.ini.parent, ignore_errors=True)

    def _vela_setup(self):
        if self.request.backend != VELA:
            return None
        from .vela import vela_setup
        return vela_setup(self.model_path, self.target, self.base, self.request)

    def _run(self) -> SearchResult:
        request = self.request
        self.log.note(f"mcudeploy search {self.model_name} --target {self.target.name} --objective "
                      f"{request.objective} --budget {request.budget} --seed {request.seed} -j {request.jobs}"
                      f" (back end {request.backend})")
        if request.backend == MCUDEPLOY:
            check_against_target(SpaceContext(self.target, self.base), request.space or {})   # before any trial
        first = self.first_trial()
        space = self._space(first)
        result = SearchResult(request, space, model=self.model_name, target=self.target.name, base=self.base)
        if request.objective != "memory" and first.metrics is not None and first.metrics.latency_us is None:
            raise UsageError(f"--objective {request.objective}: target {self.target.name!r} gives no latency "
                             f"estimate ({'; '.join(first.notes) or 'no estimator figures'}); use --objective memory")
        proposer = Proposer(space, request.objective, request.seed)
        proposer.mark(first.config)
        self.explore(proposer)
        result.best = best_trial(self.trials, request.objective)
        result.front = pareto_front(self.trials)
        result.on_chip_front = on_chip_front(self.trials)
        result.pruned = len(self.pruned)
        if self.pruned:
            self.log.note(f"pruned {len(self.pruned)} configuration(s) by the bounds (no trial run for them)")
        if result.best is not None and request.critical_limit and request.backend == MCUDEPLOY:
            result.critical = self.critical_limit(result.best)
        elif result.best is None and request.fixes and request.backend == MCUDEPLOY:
            from .fixes import what_if
            result.fixes = what_if(self, space)
        result.trials, result.seconds = list(self.trials), self._elapsed()
        cost = cost_note(self.trials)
        if cost is not None:
            self.log.note(cost)
        if request.backend == VELA:
            result.baseline = self._vela_baseline()
            result.vela = self.runner_setup.vela
        return result

    def _space(self, first: Trial):
        context = SpaceContext(self.target, self.base, npu_refused=_refused_nodes(first),
                               tiling=pipeline_has("tiling"), graph_split=pipeline_has("split"),
                               weight_budgets=self._weight_budgets())
        if self.request.backend == VELA:
            space = self.vela_space()
        else:
            space = build_space(context, self.request.locked, self.request.space)
        self.log.set_shown(space.free, set(space.values), first.config)
        free = ", ".join(f"{name} [{', '.join(map(describe_value, space.values[name]))}]" for name in space.free)
        self.log.note(f"option space: {space.size()} configurations; varied: {free or 'nothing'}; "
                      f"locked by the user: {', '.join(sorted(space.locked)) or 'nothing'}")
        return space

    def _weight_budgets(self) -> tuple[int, ...]:
        """``[weights] ram_limit`` values (:func:`~mcudeploy.plan.placement.hot_weight_budgets`),
        on a target whose flash is slow enough that copying weights pays (rule 3 of
        :mod:`~mcudeploy.plan.placement`); none on an internal-flash part."""
        if self.request.backend != MCUDEPLOY or not slow_flash(self.target):
            return ()
        graph = self.graph if self.graph is not None else self.runner_graph()
        return hot_weight_budgets(deployable_graph(graph.copy()), self.target)

    def vela_space(self):
        from .vela import vela_space
        context = SpaceContext(self.target, self.base)
        return vela_space(context, frozenset(), self.request.space)

    def _vela_baseline(self) -> dict:
        from .vela import our_estimate
        return our_estimate(self.model_path, self.target, self.base)


def pinned_config(trial: Trial) -> dict:
    """``trial``'s configuration with what its automatic tiling / split chose written out
    (:func:`.records.pin_automatic`): the same deployment at the trial's limit, and one whose
    critical SRAM limit means something (each limit would otherwise be another rewrite, and an
    expensive one: a levels table at sram_limit 0 measures every count of every level)."""
    extra = trial.metrics.extra if trial.metrics is not None else {}
    config = dict(trial.config)
    if "pinned_tiling_regions" in extra:
        config.update(tiling_auto=False, tiling_regions=extra["pinned_tiling_regions"])
    if "pinned_split_points" in extra:
        config.update(split_auto=False, split_levels=False, split_limit=None, split_points=extra["pinned_split_points"])
    return config


def run_search(model: str | Path | Graph, request: SearchRequest) -> SearchResult:
    """Search the option space of ``model`` on the request's target (module docstring)."""
    return Search(model, request).run()


def _reusable(trial: Trial) -> float:
    """Seconds of ``trial`` a later trial of the same rewrite does not spend again."""
    extra = trial.metrics.extra if trial.metrics is not None else {}
    return float(extra.get("reusable_seconds", 0.0) or 0.0)

