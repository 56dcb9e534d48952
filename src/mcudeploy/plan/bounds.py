"""Lower bound on the arena size of any valid plan: the live-set (peak) bound.

    bound = max over steps t of  sum of packed sizes of buffers alive at t
            (buffer b alive at t  <=>  b.start <= t < b.end)

Every valid plan puts the buffers alive at one step in pairwise disjoint byte ranges,
so its arena is at least their total. The bound is exact for a single step but not in
general: fragmentation can force any packing above it (deciding whether a given capacity
is reachable is NP-complete).

Cheaper-looking alternatives give nothing more here: the time intervals form an interval
graph, whose maximal cliques are exactly the sets alive at one step (Helly property of
intervals), so the max-weight-clique bound equals the live-set bound. The live sum only
changes at a buffer's start, so it is enough to evaluate it at the distinct start steps
(a sweep over sorted events, O(n log n)). Stronger bounds need search; the exact CP-SAT
allocator reports the bound it proves in :attr:`Plan.proven_lower_bound`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .buffers import Buffer


@dataclass(frozen=True)
class LiveSetBound:
    """The bound, the step intervals ``[first, last)`` where it is reached, and the buffers
    alive at the first of them."""

    bytes: int
    peak_intervals: list[tuple[int, int]]
    peak_buffers: list[Buffer]


def live_sizes(buffers: list[Buffer]) -> list[tuple[int, int, int]]:
    """Piecewise-constant live size: ``(first_step, end_step, live_bytes)`` for each interval
    between consecutive distinct start/end steps."""
    delta: dict[int, int] = {}
    for buffer in buffers:
        delta[buffer.start] = delta.get(buffer.start, 0) + buffer.packed_size
        delta[buffer.end] = delta.get(buffer.end, 0) - buffer.packed_size
    steps = sorted(delta)
    pieces, live = [], 0
    for step, next_step in zip(steps, steps[1:]):
        live += delta[step]
        pieces.append((step, next_step, live))
    return pieces


def live_set_bound(buffers: list[Buffer]) -> LiveSetBound:
    """The live-set lower bound with where it is reached (see the module docstring)."""
    pieces = live_sizes(buffers)
    if not pieces:
        return LiveSetBound(0, [], [])
    peak = max(live for _, _, live in pieces)
    intervals = _merge([(first, end) for first, end, live in pieces if live == peak])
    first_step = intervals[0][0]
    alive = [b for b in buffers if b.start <= first_step < b.end]
    alive.sort(key=lambda b: -b.packed_size)
    return LiveSetBound(peak, intervals, alive)


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, end in intervals:
        if merged and merged[-1][1] == first:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((first, end))
    return merged
