"""The search's input and output records.

:class:`SearchRequest` is every setting of one search (what ``mcudeploy search`` parses);
:class:`SearchResult` is what it found: every trial in order, the best one for the
objective, the Pareto front, the critical SRAM limit of the best (a
:class:`~.critical.Boundary`), the what-if fixes when nothing passes, and the count of
configurations the bounds pruned. :meth:`SearchResult.to_json` is the ``--json`` document;
:meth:`SearchResult.best_toml` the ``-o BEST.toml`` file (:func:`mcudeploy.options.options_toml`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..options import DeploymentOptions, options_toml
from .critical import Boundary
from .reasons import Constraints
from .space import Space, options_for

FOUND_BY = "found by: mcudeploy search"      # the first header line of every file search writes


def latency_text(trial) -> str:
    """A trial's estimated latency as the log, the console and the written files show it."""
    latency = trial.metrics.latency_us
    return "unknown" if latency is None else f"{latency / 1000:.3f} ms"


def pin_automatic(options: DeploymentOptions, metrics) -> DeploymentOptions:
    """``options`` with the automatic tiling / split a trial found replaced by the regions and
    points it chose (:func:`.trial._pinned`): the same deployment, without the search."""
    extra = metrics.extra if metrics is not None else {}
    changes: dict[str, Any] = {}
    if "pinned_tiling_regions" in extra:
        changes.update(tiling_regions=extra["pinned_tiling_regions"], tiling_auto=False)
    if "pinned_split_points" in extra:
        changes.update(split_points=extra["pinned_split_points"], split_auto=False, split_levels=False, split_limit=None)
    return options.with_values(**changes) if changes else options


@dataclass(frozen=True)
class SearchRequest:
    target: Any = None                      # name, target file, or Target (None: options.target)
    options: DeploymentOptions = DeploymentOptions()
    locked: frozenset[str] = frozenset()    # option fields the user gave: never varied
    objective: str = "memory"
    budget: int | None = 100                # trials of the exploration (None: until time or space ends)
    time_limit: float | None = None         # seconds of exploration
    jobs: int = 1
    seed: int = 0
    constraints: Constraints = Constraints()
    space: dict[str, list] = field(default_factory=dict)      # --space overrides
    backend: str = "mcudeploy"              # or "vela"
    input_shapes: dict | None = None
    log_path: Path | None = None
    critical_limit: bool = True             # bisect the best's critical sram_limit
    fixes: bool = True                      # what-if fixes when nothing passes


@dataclass
class Fix:
    """One verified what-if fix: what to change, what it costs, how to apply it."""
    kind: str                  # resolution | psram | split | tiling | alignment | skip_conv | sram_limit | reserve | int8_io
    title: str
    verified: bool             # the pipeline on the changed model / configuration: its reasons are gone
    price: dict[str, Any] = field(default_factory=dict)
    apply: list[str] = field(default_factory=list)          # exact command lines / config lines
    details: list[str] = field(default_factory=list)
    rank: float = 0.0          # smaller: cheaper (module fixes.py says how it is computed)
    trial: int | None = None   # the trial that verified it
    exact: bool = True         # False: needs retraining (not numerically equivalent)
    passes: bool = False       # its trial PASSes outright (verified: the reasons it targets are gone)
    changes: dict[str, Any] = field(default_factory=dict)   # the configuration changes it makes

    def to_json(self) -> dict:
        return {"kind": self.kind, "title": self.title, "verified": self.verified, "price": self.price,
                "apply": list(self.apply), "details": list(self.details), "rank": self.rank,
                "trial": self.trial, "exact": self.exact, "passes": self.passes,
                "changes": {k: v for k, v in self.changes.items()}}


@dataclass
class SearchResult:
    request: SearchRequest
    space: Space
    trials: list = field(default_factory=list)
    best: Any = None
    front: list = field(default_factory=list)
    critical: Boundary | None = None
    fixes: list[Fix] = field(default_factory=list)
    pruned: int = 0
    seconds: float = 0.0
    model: str = ""
    target: str = ""
    notes: list[str] = field(default_factory=list)
    baseline: dict[str, Any] = field(default_factory=dict)   # back-end figures outside the trials
    base: DeploymentOptions | None = None       # the options of trial 0 (the request's, with the target)
    vela: Any = None                            # search.vela.VelaSetup of the Vela back end
    on_chip_front: list = field(default_factory=list)   # pareto.on_chip_front: the memory objective's choices

    @property
    def default(self):
        return self.trials[0] if self.trials else None

    @property
    def found(self) -> bool:
        return self.best is not None

    def best_options(self) -> DeploymentOptions | None:
        """The winning deployment options (the Vela back end: the base's, the Vela command is
        in :meth:`best_toml`'s header)."""
        if self.best is None:
            return None
        base = self.base or self.request.options
        if self.vela is not None:
            return base
        return self.trial_options(self.best)

    def trial_options(self, trial) -> DeploymentOptions:
        """The deployment options of one trial, its automatic tiling / split written out."""
        return pin_automatic(options_for(self.base or self.request.options, trial.config), trial.metrics)

    def pinned_note(self, trial=None) -> str:
        trial = self.best if trial is None else trial
        extra = trial.metrics.extra if trial is not None and trial.metrics is not None else {}
        if "pinned_tiling_regions" not in extra and "pinned_split_points" not in extra:
            return ""
        return ("\nthe automatic tiling / split of that trial is written out as [tiling] regions and [split] points, "
                "so plan and generate replay it without searching again")

    def best_toml(self, vela_ini_name: str = "vela.ini") -> str:
        options = self.best_options()
        assert self.best is not None and options is not None  # written for a search that found one
        metrics = self.best.metrics
        if self.vela is not None:
            from .vela import command_line
            return options_toml(options, header=f"best Vela configuration (trial {self.best.index}), "
                                                f"Vela's estimate {metrics.latency_us / 1000:.3f} ms, SRAM "
                                                f"{metrics.on_chip_bytes} bytes (vela.ini: written beside this file):\n"
                                                f"{command_line(self.vela, self.best.config, vela_ini_name)}")
        header = self._found_by(self.best)
        if self.critical is not None and self.critical.found:
            header += (f"\ncritical sram_limit {self.critical.passing} bytes (one byte less does not fit)"
                       if self.critical.exact else f"\nsram_limit {self.critical.passing} bytes fits, "
                       f"{self.critical.failing} does not (bisection stopped by --time)")
        return options_toml(options, header=header)

    def _found_by(self, trial) -> str:
        metrics, latency = trial.metrics, latency_text(trial)
        return (f"{FOUND_BY} {self.model} --target {self.target} --objective "
                f"{self.request.objective} (trial {trial.index} of {len(self.trials)})\n"
                f"estimated latency {latency} (executor {self.request.options.executor}); on-chip RAM "
                f"{metrics.on_chip_bytes} bytes; external RAM {metrics.external_bytes} bytes; flash "
                f"{metrics.flash_bytes} bytes" + self.pinned_note(trial))

    def trial_toml(self, trial) -> str:
        """One point of the on-chip front as a ``--config`` file (``search -o BEST --front``)."""
        rank = next((i for i, t in enumerate(self.on_chip_front, 1) if t is trial), 0)
        place = f"\npoint {rank} of {len(self.on_chip_front)} of the on-chip front (on-chip RAM up, latency down)"
        return options_toml(self.trial_options(trial), header=self._found_by(trial) + place)

    def to_json(self) -> dict:
        critical = None
        if self.critical is not None:
            critical = {"passing": self.critical.passing, "failing": self.critical.failing,
                        "exact": self.critical.exact, "trials": [t.index for t in self.critical.trials]}
        return {"model": self.model, "target": self.target, "executor": self.request.options.executor,
                "objective": self.request.objective,
                "backend": self.request.backend, "seed": self.request.seed, "jobs": self.request.jobs,
                "budget": self.request.budget, "seconds": round(self.seconds, 3),
                "constraints": self.request.constraints.to_dict(),
                "space": {name: [str(v) for v in values] for name, values in self.space.values.items()},
                "locked": sorted(self.space.locked), "trials_run": len(self.trials), "pruned": self.pruned,
                "default": self.default.to_json() if self.default else None,
                "best": self.best.to_json() if self.best else None,
                "best_options": options.to_dict() if (options := self.best_options()) is not None else None,
                "front": [t.index for t in self.front], "on_chip_front": [t.index for t in self.on_chip_front],
                "critical_sram_limit": critical,
                "fixes": [fix.to_json() for fix in self.fixes], "notes": list(self.notes),
                "baseline": self.baseline}
