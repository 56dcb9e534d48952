"""One trial of the search: a configuration run through the real pipeline, PASS or FAIL with
every reason and its numbers.

    evaluate(graph, target, options, constraints) -> (Deployment | None, Trial)

The configuration becomes :class:`~mcudeploy.options.DeploymentOptions`; the deployment is
:func:`mcudeploy.driver.deploy` (mapping, kernels, plan, placement, ledger) and its latency
:func:`mcudeploy.estimate.estimate`; :mod:`.reasons` reads both. A :class:`Trial` keeps only
plain figures (:class:`Metrics`), so it crosses process boundaries and goes to the JSON log:

    on_chip_bytes    sum of the ledger's use of on-chip RAM regions (arena, fixed items,
                     weights copied to RAM)
    external_bytes   the same for external RAM (PSRAM)
    flash_bytes      the weights the firmware image stores in flash (those copied to RAM at
                     start-up included), or the ledger's flash use when it is larger
    latency_us       the estimator's total (None when the target lacks its figures: a
                     latency is never made up)
    bound_bytes      the plan's lower bound (:mod:`.bounds`), for pruning

A deployment that does not fit is a FAIL, not an error. An error of the pipeline
(:class:`~mcudeploy.errors.McuDeployError`) in a trial is a FAIL ``UNSUPPORTED`` with its
text; the engine re-raises it for the first trial, where it is the user's input that is wrong.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..driver import deploy
from ..errors import McuDeployError
from ..estimate import estimate
from .bounds import arena_lower_bound
from .reasons import Constraints, Reason, stored_weight_bytes, trial_reasons, unsupported

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..plan.memory_transform import MemoryTransform
    from ..targets import Target

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
PLAN_KNOBS = ("schedule", "reuse", "overlap", "concat_in_place", "alignment", "io_in_arena", "kernels",
              "force_cpu", "tiling_auto", "tiling_max_overhead", "split_auto", "split_levels", "split_limit")
"""Knobs the memory plan depends on; the others only choose regions (:mod:`.bounds`)."""
OFF_CHIP_SHOWN = 12


@dataclass
class Metrics:
    latency_us: float | None = None
    latency_complete: bool = False
    on_chip_bytes: int = 0
    external_bytes: int = 0
    flash_bytes: int = 0
    arena_bytes: int = 0
    bound_bytes: int = 0
    fixed_bytes: int = 0
    home_region: str = ""
    overflow_bytes: int = 0
    macc: int = 0
    arena_region: str = ""
    banks: dict[str, int] = field(default_factory=dict)
    off_chip_tensors: list[tuple[str, int]] = field(default_factory=list)   # the largest OFF_CHIP_SHOWN
    off_chip_count: int = 0                 # activation tensors in external RAM
    arena_off_chip: bool = False            # the arena (or one of its banks) is in external RAM
    extra: dict[str, Any] = field(default_factory=dict)     # back-end figures (Vela: cycles, SRAM)
    weights_in_ram: dict[str, int] = field(default_factory=dict)   # region -> weight bytes copied out of flash

    @property
    def ram_bytes(self) -> int:
        return self.on_chip_bytes + self.external_bytes


@dataclass
class Trial:
    config: dict[str, Any]
    status: str
    reasons: list[Reason] = field(default_factory=list)
    metrics: Metrics | None = None
    notes: list[str] = field(default_factory=list)
    phase: str = "explore"
    index: int = -1
    seconds: float = 0.0
    label: str = ""                  # what the trial tests (bisection step, fix)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def cell(self) -> tuple:
        return tuple((name, _hashable(self.config.get(name))) for name in PLAN_KNOBS)

    def to_json(self) -> dict:
        return {"trial": self.index, "phase": self.phase, "label": self.label, "status": self.status,
                "config": {k: list(v) if isinstance(v, tuple) else v for k, v in self.config.items()},
                "reasons": [r.to_json() for r in self.reasons],
                "metrics": asdict(self.metrics) if self.metrics is not None else None,
                "notes": list(self.notes), "seconds": round(self.seconds, 4)}


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _off_chip(deployment: Deployment) -> list[tuple[str, int]]:
    """Every activation tensor placed in external RAM, largest first."""
    regions = {r.name: r for r in deployment.target.regions} if deployment.target else {}
    tensors = [(p.name, p.size) for p in deployment.plan.tensors.values()
               if p.region in regions and not regions[p.region].on_chip]
    return sorted(tensors, key=lambda item: (-item[1], item[0]))


def _arena_off_chip(deployment: Deployment) -> bool:
    """Whether the activation arena itself is placed in external RAM (not only the tensors a
    graph split spills there)."""
    placement, target = deployment.plan.placement, deployment.target
    if target is None:
        return False
    external = {r.name for r in target.regions if not r.on_chip}
    return placement.arena_region in external or any(name in external for name in placement.arena_banks)


def _transform_figures(deployment: Deployment) -> dict[str, Any]:
    """Tiling and graph-split figures of the deployment's memory transformations, if any."""
    transform = deployment.memory_transform
    figures: dict[str, Any] = {}
    if transform is None:
        return figures
    if transform.tiling is not None:
        tiling = transform.tiling.to_json()
        figures["tiling_macc_overhead_percent"] = round(100 * tiling.get("macc_overhead", 0.0), 2)
        figures["tiling_regions"] = [f"{r['start']}..{r['end']} x{r['tiles']}" for r in tiling.get("regions", [])]
        figures["reusable_seconds"] = tiling.get("reusable_seconds", 0.0)
    if transform.split is not None:
        split = transform.split.to_json()
        figures["split_external_bytes"] = deployment.plan.external_bytes
        figures["split_bytes_exchanged"] = sum(t.bytes for t in deployment.plan.transfers.values())
        figures["split_points"] = list(split.get("points", []))
        figures["split_tensors"] = list(split.get("tensors", []))[:8]
    figures.update(_pinned(transform))
    return figures


def _pinned(transform: MemoryTransform) -> dict[str, Any]:
    """The automatic choices as the explicit options that replay them (``[tiling] regions``,
    ``[split] points``), so the search's ``-o`` file deploys without searching again. A split
    by spilled tensors (``[split] auto``) has no points to write: it stays automatic."""
    split = transform.split
    if split is not None and not split.given:
        return {}
    pinned: dict[str, Any] = {}
    if transform.tiling is not None and transform.tiling.rule != "given":
        pinned["pinned_tiling_regions"] = [region.to_table() for region in transform.tiling.regions]
    if split is not None and split.rule != "points":
        pinned["pinned_split_points"] = list(split.given)
    return pinned


def metrics_of(deployment: Deployment, latency) -> Metrics:
    """The plain figures of a deployment (module docstring)."""
    ledger, plan = deployment.ledger, deployment.plan
    placement = plan.placement
    use = {"sram": 0, "psram": 0, "flash": 0}
    for region in ledger.regions:
        use[region.kind] = use.get(region.kind, 0) + region.used
    fixed = sum(line.bytes for line in ledger.lines if line.item in (
        "runtime state", "stack", "application reserve", "inputs", "outputs"))
    macc = deployment.mapping.total_macc if deployment.mapping is not None else 0
    off_chip = _off_chip(deployment)
    return Metrics(latency_us=None if latency is None else latency.latency_us,
                   latency_complete=bool(latency is not None and latency.complete),
                   on_chip_bytes=use["sram"], external_bytes=use["psram"],
                   flash_bytes=max(use["flash"], stored_weight_bytes(deployment)),
                   arena_bytes=plan.arena_bytes, bound_bytes=arena_lower_bound(plan), fixed_bytes=fixed,
                   home_region=placement.home_region if placement else "",
                   overflow_bytes=sum(r.overflow for r in ledger.regions), macc=macc,
                   arena_region=placement.arena_region if placement else "",
                   banks=dict(placement.arena_banks) if placement else {}, off_chip_tensors=off_chip[:OFF_CHIP_SHOWN],
                   off_chip_count=len(off_chip), arena_off_chip=_arena_off_chip(deployment),
                   extra=_transform_figures(deployment), weights_in_ram=weights_in_ram(deployment))


def weights_in_ram(deployment: Deployment) -> dict[str, int]:
    """Weight bytes per RAM region the plan copied them to (the on-chip cost of not streaming them
    from flash, as the vendor's default placement does on an NPU target)."""
    target = deployment.target
    kinds = {region.name: region.kind for region in target.regions} if target is not None else {}
    copied: dict[str, int] = {}
    for value in deployment.graph.constants():
        region = deployment.plan.weights.get(value.name, "")
        if region and kinds.get(region, "flash") != "flash":
            copied[region] = copied.get(region, 0) + value.nbytes
    return copied


def _estimate(deployment: Deployment, notes: list[str]):
    try:
        latency = estimate(deployment)
    except McuDeployError as err:
        notes.append(f"no latency estimate: {err}")
        return None
    if not latency.complete:
        unknown = [layer.node for layer in latency.layers if not layer.known]
        notes.append(f"latency estimate incomplete: {len(unknown)} layer(s) unknown ({', '.join(unknown[:3])})")
    return latency


def evaluate(graph, target: Target, options, constraints: Constraints, config: dict[str, Any] | None = None,
             *, raise_errors: bool = False):
    """(deployment or None, :class:`Trial`) of ``options`` (module docstring)."""
    started = time.perf_counter()
    config = dict(config or {})
    notes: list[str] = []
    try:
        deployment = deploy(graph, options, target=target)
    except McuDeployError as err:
        if raise_errors:
            raise
        return None, Trial(config, FAIL, [unsupported(err)], seconds=time.perf_counter() - started)
    latency = _estimate(deployment, notes)
    if deployment.precision != "integer":
        notes.append(f"precision {deployment.precision}: the C generator needs a full-integer model")
    reasons = trial_reasons(deployment, latency, constraints)
    trial = Trial(config, FAIL if reasons else PASS, reasons, metrics_of(deployment, latency), notes,
                  seconds=time.perf_counter() - started)
    return deployment, trial
