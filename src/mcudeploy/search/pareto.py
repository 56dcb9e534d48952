"""Ranking passing trials: the objective's order and the Pareto front.

Input: :class:`~.trial.Trial` s. Output: the best trial for an objective and the trials no
other one beats on every axis.

Objectives (smaller is better, compared as tuples, ties broken by the trial index):

    memory     (RAM = on-chip + external bytes, on-chip bytes, latency, flash bytes)
    latency    (latency, RAM, flash)
    balanced   (latency / latency_ref + RAM / RAM_ref, latency, RAM), the references being
               the first passing trial's figures (the defaults when they pass)

A missing latency (no estimate) counts as +inf. The front is over (latency, on-chip RAM,
flash): trial ``a`` dominates ``b`` when it is no worse on all three and better on one;
trials with equal figures keep the earliest. Both are deterministic.
"""
from __future__ import annotations

import math

from ..errors import UsageError

OBJECTIVES = ("memory", "latency", "balanced")


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
        return (metrics.ram_bytes, metrics.on_chip_bytes, latency, metrics.flash_bytes, trial.index)
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
