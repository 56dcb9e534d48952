"""Which configurations to try next: neighbourhood moves from the incumbent, then seeded
random mutations of the Pareto front. Smart, not exhaustive.

Input: the :class:`~.space.Space`, the objective, a seed and the trials so far. Output: the
next batch of configurations (at most ``BATCH``), never one already tried.

1. **Combine**: the incumbent (the best passing trial for the objective; while nothing passes,
   the *least failing* one: fewest bytes over capacity, then fewest reasons) with every other
   front member's differing knobs taken one at a time - two moves that each helped alone are
   tried together first;
2. **one knob at a time** from the incumbent, knobs in the objective's priority order
   (:data:`PRIORITY`), each alternative value;
   With the memory objective, an incumbent that tiles the levels (``split_levels``) also tries
   ``split_limit`` at :data:`DESCENT` fractions of its own on-chip arena next (rounded down
   to 1 KiB): the space's peaks are the room and the bank sizes, and the least on-chip RAM lies
   between them, where more tiles stop paying for their runtime state (U-Net 256: the hand
   configuration's 350 KB arena sat below the 448 KiB npuRAM peak the ladder offered); each
   improvement proposes the next step down from the new arena, so the descent ends where a
   lower peak no longer lowers the on-chip bytes;
3. when the incumbent has no untried neighbour: **mutate**: two or three free knobs of a
   random front member (or the incumbent) set to random values, from a
   ``random.Random(seed)``.

Within a batch, the configurations that rewrite the graph (:data:`REWRITES`: automatic tiling,
graph split, levels) run after the others (:func:`cheap_first`), so a batch the time budget cuts
short has measured its cheap moves.

**Cost**: a knob value whose trials are *expensive* (mean time above ``EXPENSIVE_SECONDS`` and
``EXPENSIVE_FACTOR`` x the median trial, e.g. automatic tiling of a 512x512 U-Net: a minute
each) takes at most ``EXPENSIVE_PER_BATCH`` places in a batch, and the neighbours of the best
cheap trial are proposed beside the incumbent's, so cheap moves are not starved. Durations are
rounded to whole seconds before they are compared. A rewrite value no trial has run yet (its
cost unknown) takes at most one place in a batch (:func:`unmeasured_rewrite`): the first batch
of a 256x256 U-Net tried the levels (28 s) and automatic tiling (100-135 s on 2 cores) together,
and the tiling spent the exploration's share of ``--time`` before any neighbour of the levels
trial, the only configuration with its arena on chip, could run. And while the incumbent is a
rewrite that put the arena on chip, no other rewrite of unknown cost is tried: its refinements
(weights, peaks) come first (U-Net 256: a second 89 s automatic tiling, arena off chip, left
the levels' lower peaks "not run" past the exploration's share).

The batch size is fixed (not the number of workers) and proposals depend only on the trials'
outcomes (and those rounded durations), so a search is the same with ``-j 1`` and ``-j 8``
unless a trial's time crosses the threshold differently.
"""
from __future__ import annotations

import random
from typing import Any

from .pareto import best_trial, pareto_front
from .space import Space, config_key, move, normalise

BATCH = 8
MUTATION_DRAWS = 64
EXPENSIVE_SECONDS = 5.0
EXPENSIVE_FACTOR = 10.0
EXPENSIVE_PER_BATCH = 2
PRIORITY = {
    # memory: the knobs that move the most bytes first - where the weights live (all of their
    # bytes on or off chip), then the rewrites that bring an activation peak under a bank
    # (levels, tiling, split), then the fine ones (order, reuse, alignment: a few percent)
    "memory": ("weights", "weights_ram_limit", "split_levels", "split_limit", "tiling_auto", "tiling_max_overhead",
               "split_auto", "split_arena", "external_activations", "schedule", "reuse", "overlap", "concat_in_place",
               "alignment", "io_in_arena", "activation_region", "force_cpu", "kernels"),
    "latency": ("activation_region", "weights", "weights_ram_limit", "kernels", "split_arena", "external_activations",
                "force_cpu", "tiling_auto", "tiling_max_overhead", "split_auto", "split_levels", "split_limit", "schedule", "reuse",
                "overlap", "concat_in_place", "alignment", "io_in_arena"),
}
PRIORITY["balanced"] = PRIORITY["latency"]


REWRITES = ("tiling_auto", "split_auto", "split_levels")
DESCENT = (0.9, 0.75)
DESCENT_STEP = 1024


def descent(incumbent, objective: str) -> list[dict[str, Any]]:
    """Lower ``split_limit`` peaks for a levels incumbent (module docstring, step 2)."""
    metrics = incumbent.metrics if incumbent is not None else None
    if objective != "memory" or metrics is None or not incumbent.config.get("split_levels") \
            or metrics.arena_off_chip or metrics.arena_bytes <= DESCENT_STEP:
        return []
    peaks = [int(metrics.arena_bytes * fraction) // DESCENT_STEP * DESCENT_STEP for fraction in DESCENT]
    return [normalise({**incumbent.config, "split_limit": peak}) for peak in peaks if peak > 0]


def unmeasured_rewrite(config: dict[str, Any], trials: list) -> bool:
    """``config`` turns on a rewrite (:data:`REWRITES`) with a value no trial has run yet."""
    return any(config.get(knob) and not any(t.config.get(knob) == config.get(knob) for t in trials)
               for knob in REWRITES)


def cheap_first(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``configs`` with those that rewrite the graph last (module docstring), order kept otherwise."""
    return sorted(configs, key=lambda config: any(config.get(knob) for knob in REWRITES))


def least_failing(trials: list):
    """The failed trial closest to fitting (fewest bytes over, then fewest reasons)."""
    failed = [t for t in trials if t.status == "FAIL" and t.metrics is not None]
    if not failed:
        return None
    return min(failed, key=lambda t: (t.metrics.overflow_bytes, len(t.reasons), t.index))


class Proposer:
    """Proposes batches of untried configurations (module docstring)."""

    def __init__(self, space: Space, objective: str, seed: int = 0) -> None:
        self.space, self.objective = space, objective
        self.random = random.Random(seed)
        self.tried: set[tuple] = set()
        self.order = [k for k in PRIORITY[objective] if k in space.free] + \
            [k for k in space.free if k not in PRIORITY[objective]]

    def mark(self, config: dict[str, Any]) -> bool:
        """Record ``config`` as tried; False when it already was."""
        key = config_key(config)
        if key in self.tried:
            return False
        self.tried.add(key)
        return True

    def _neighbours(self, config: dict[str, Any]) -> list[dict[str, Any]]:
        moves = []
        for knob in self.order:
            for value in self.space.values[knob]:
                if value != config.get(knob):
                    moves.append(move(config, knob, value))
        return moves

    def _combinations(self, incumbent, front: list) -> list[dict[str, Any]]:
        moves = []
        for other in front:
            for knob in self.order:
                if other.config.get(knob) != incumbent.config.get(knob):
                    moves.append(move(incumbent.config, knob, other.config[knob]))
        return moves

    def _mutation(self, parents: list) -> dict[str, Any]:
        parent = self.random.choice(parents)
        config = dict(parent.config)
        for knob in self.random.sample(self.order, min(len(self.order), self.random.choice((2, 3)))):
            config[knob] = self.random.choice(self.space.values[knob])
        return normalise(config)

    def expensive_values(self, trials: list) -> set[tuple[str, Any]]:
        """(knob, value) pairs whose trials are expensive (module docstring)."""
        timed = [t for t in trials if t.seconds]
        if len(timed) < 2:
            return set()
        median = sorted(round(t.seconds) for t in timed)[len(timed) // 2]
        threshold = max(EXPENSIVE_SECONDS, EXPENSIVE_FACTOR * median)
        expensive = set()
        for knob in self.order:
            for value in self.space.values[knob]:
                times = [round(t.seconds) for t in timed if t.config.get(knob) == value]
                if times and sum(times) / len(times) > threshold and value != self.space.values[knob][0]:
                    expensive.add((knob, value))
        return expensive

    def next_batch(self, trials: list) -> list[dict[str, Any]]:
        """Up to :data:`BATCH` untried configurations (module docstring)."""
        if not self.order:
            return []
        incumbent = best_trial(trials, self.objective) or least_failing(trials) or (trials[0] if trials else None)
        if incumbent is None:
            return []
        expensive = self.expensive_values(trials)
        costly = lambda config: any(config.get(k) == v for k, v in expensive)     # noqa: E731
        cheap = [t for t in trials if not costly(t.config)]
        parents = [incumbent] + ([best_trial(cheap, self.objective) or least_failing(cheap)] if costly(
            incumbent.config) and cheap else [])
        front = pareto_front(trials)
        # the incumbent with what each other front member changed comes first: two moves that each
        # helped alone (weights in flash; the levels split) are most likely to help together
        candidates = self._combinations(incumbent, front) + descent(incumbent, self.objective)
        candidates += [move for parent in parents if parent is not None for move in self._neighbours(parent.config)]
        candidates += [self._mutation(front or parents) for _ in range(MUTATION_DRAWS)]
        # an incumbent whose rewrite already put the arena on chip is refined before another
        # rewrite of unknown cost is tried beside it (module docstring, Cost)
        refining = incumbent.passed and incumbent.metrics is not None and not incumbent.metrics.arena_off_chip \
            and any(incumbent.config.get(knob) for knob in REWRITES)
        batch: list[dict[str, Any]] = []
        keys: set[tuple] = set()
        for candidate in candidates:
            key = config_key(candidate)
            if len(batch) >= BATCH:
                break
            if key in self.tried or key in keys or (costly(candidate) and
                                                    sum(map(costly, batch)) >= EXPENSIVE_PER_BATCH):
                continue
            if unmeasured_rewrite(candidate, trials) and (refining or any(unmeasured_rewrite(c, trials) for c in batch)):
                continue
            batch.append(candidate)
            keys.add(key)
        return batch
