"""Ranking passing trials: the objective's order and the Pareto front.

Input: :class:`~.trial.Trial` s. Output: the best trial for an objective and the trials no
other one beats on every axis.

Objectives (smaller is better, compared as tuples, ties broken by the trial index):

    memory     (arena off chip, on-chip bytes, external bytes, latency, flash bytes);
               the best is found on the first class's front of (on-chip bytes, latency): from
               the least on-chip RAM, a step to the next larger, faster point is taken when it
               saves a larger share of latency than it adds of on-chip RAM (a 0.3 % larger RAM
               for 10 % less latency, or 9 % for 11 %: yes; 540 % more RAM for 86 % less latency:
               no), until no step pays (:func:`memory_knee`). On-chip and external RAM are not
               added: a graph split's 18 MiB of PSRAM made a 150 KB difference on chip look like
               1 % of their sum (U-Net 512)
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
        return memory_knee(kept)
    return min(passing, key=lambda t: objective_key(t, objective, reference))


def memory_knee(trials: list):
    """The memory objective's best of ``trials`` (one class; module docstring): from the least
    on-chip RAM, move to the first larger point of the (on-chip bytes, latency) front that
    saves a larger fraction of latency than it adds of on-chip bytes, again from there, until
    none does. A point with no latency estimate is not left for a faster one (its speed is
    unknown, not slow)."""
    front = ram_latency_front(trials)
    best, rest = front[0], front[1:]
    while rest:
        memory, latency = best.metrics.on_chip_bytes, _latency(best)
        if not math.isfinite(latency) or not latency:
            break
        paying = [index for index, candidate in enumerate(rest)
                  if 1 - _latency(candidate) / latency > (candidate.metrics.on_chip_bytes / memory - 1 if memory
                                                           else math.inf)]
        if not paying:
            break
        best, rest = rest[paying[0]], rest[paying[0] + 1:]
    return best


def ram_latency_front(trials: list) -> list:
    """The (on-chip bytes, latency) front of ``trials`` (all passing), by increasing on-chip
    bytes: each point strictly faster than the one before; equal figures keep the earliest."""
    ordered = sorted(trials, key=lambda t: (t.metrics.on_chip_bytes, _latency(t), t.metrics.external_bytes,
                                            t.metrics.flash_bytes, t.index))
    front: list = []
    for trial in ordered:                     # increasing on-chip: keep strictly faster points only
        if not front or _latency(trial) < _latency(front[-1]):
            front.append(trial)
    return front


def on_chip_front(trials: list) -> list:
    """The memory objective's choices: the (on-chip bytes, latency) front of the passing trials
    whose arena is on chip (:func:`ram_latency_front`); empty when none is."""
    passing = [t for t in trials if t.passed and t.metrics is not None and not t.metrics.arena_off_chip]
    return ram_latency_front(passing) if passing else []


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
