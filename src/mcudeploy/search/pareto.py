"""Ranking passing trials: the objective's order and the Pareto front.

Input: :class:`~.trial.Trial` s. Output: the best trial for an objective and the trials no
other one beats on every axis.

Objectives (smaller is better, compared as tuples, ties broken by the trial index):

    memory     (arena off chip, on-chip bytes, external bytes, latency, flash bytes);
               the best is the fastest of the trials within ``MEMORY_TOLERANCE`` of the least
               on-chip RAM in the first class (a 0.3 % smaller RAM at 10 % more latency is not a
               better answer: memory figures that close are the same memory). On-chip and
               external RAM are not added: a graph split's 18 MiB of PSRAM made a 150 KB
               difference on chip fall inside the tolerance of their sum (U-Net 512)
    latency    (latency, RAM, flash)
    balanced   (latency / latency_ref + RAM / RAM_ref, latency, RAM), the references being
               the first passing trial's figures (the defaults when they pass)

"Arena off chip": the activation arena itself (or one of its banks) is in external RAM. A
configuration whose arena is on chip - the tensors a graph split spills may be external - ranks
before any whose arena is not, as the planner places the arena (external RAM only when nothing
on chip holds it): that is the answer to "does it fit on chip", and PSRAM's latency and its
sharing with frame buffers are what the bandwidth model sees least. A missing latency (no
estimate) counts as +inf. The front is over (latency, on-chip RAM,
flash): trial ``a`` dominates ``b`` when it is no worse on all three and better on one;
trials with equal figures keep the earliest. Both are deterministic.
"""
from __future__ import annotations

import math

from ..errors import UsageError

OBJECTIVES = ("memory", "latency", "balanced")
MEMORY_TOLERANCE = 0.01


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective {objective!r}: choose one of {', '.join(OBJECTIVES)}")
    return objective


def _latency(trial) -> float:
    value = trial.metrics.latency_us if trial.metrics is not None else None
    return math.inf if value is None else value


def objective_key(trial, objective: str, reference=None) -> tuple:
    """The tuple ``objective`` minimises (module docstring)."""
    metrics = trial.metrics
    latency = _latency(trial)
    if objective == "memory":
        return (metrics.arena_off_chip, metrics.on_chip_bytes, metrics.external_bytes, latency, metrics.flash_bytes,
                trial.index)
    if objective == "latency":
        return (latency, metrics.ram_bytes, metrics.flash_bytes, trial.index)
    ref_latency = _latency(reference) if reference is not None else latency
    ref_ram = reference.metrics.ram_bytes if reference is not None else metrics.ram_bytes
    if not math.isfinite(latency):
        return (math.inf, latency, metrics.ram_bytes, trial.index)      # no estimate: last
    score = (latency / ref_latency if math.isfinite(ref_latency) and ref_latency else 1.0) + \
        (metrics.ram_bytes / ref_ram if ref_ram else 1.0)
    return (round(score, 12), latency, metrics.ram_bytes, trial.index)


def best_trial(trials: list, objective: str):
    """The passing trial the objective prefers, or None."""
    passing = [t for t in trials if t.passed and t.metrics is not None]
    if not passing:
        return None
    reference = passing[0]
    if objective == "memory":
        first_class = min(t.metrics.arena_off_chip for t in passing)
        kept = [t for t in passing if t.metrics.arena_off_chip == first_class]
        least = min(t.metrics.on_chip_bytes for t in kept)
        close = [t for t in kept if t.metrics.on_chip_bytes <= least * (1 + MEMORY_TOLERANCE)]
        return min(close, key=lambda t: (_latency(t), t.metrics.on_chip_bytes, t.metrics.external_bytes,
                                         t.metrics.flash_bytes, t.index))
    return min(passing, key=lambda t: objective_key(t, objective, reference))


def _axes(trial) -> tuple:
    return (_latency(trial), trial.metrics.on_chip_bytes, trial.metrics.flash_bytes)


def pareto_front(trials: list) -> list:
    """The passing trials that no other passing trial dominates (module docstring)."""
    passing = sorted((t for t in trials if t.passed and t.metrics is not None), key=lambda t: t.index)
    front, seen = [], set()
    for trial in passing:
        axes = _axes(trial)
        if axes in seen:
            continue
        dominated = any(all(o <= a for o, a in zip(_axes(other), axes)) and _axes(other) != axes
                        for other in passing)
        if not dominated:
            front.append(trial)
            seen.add(axes)
    return front
