"""Greedy-by-size allocator, as TensorFlow Lite Micro's GreedyMemoryPlanner describes it.

Buffers are taken by packed size, largest first (ties: earlier start, then input order).
Each is placed at the lowest aligned offset where it overlaps, in space, no already-placed
buffer that is alive at the same time: walk the time-overlapping placed buffers by offset
and take the first gap that is large enough, else the top of the highest of them.
O(n^2 log n); fast and usually good, but it can fragment (see benchmarks/results/minimalloc.md).
"""
from __future__ import annotations

import time

from ..buffers import Buffer, Plan, align_up
from .base import allocator, make_plan


def lowest_offset(buffer: Buffer, placed: list[tuple[int, int]]) -> int:
    """Lowest aligned offset for ``buffer`` given ``placed`` ``(offset, end)`` byte ranges
    of the buffers alive at the same time."""
    candidate = 0
    for low, high in sorted(placed):
        if candidate + buffer.packed_size <= low:
            break
        candidate = max(candidate, align_up(high, buffer.alignment))
    return candidate


def greedy_order(buffers: list[Buffer]) -> list[Buffer]:
    """Largest packed size first; ties by start step, then input order (Python's sort is stable)."""
    return sorted(buffers, key=lambda b: (-b.packed_size, b.start))


def place_in_order(ordered: list[Buffer]) -> dict:
    """Offsets from placing ``ordered`` buffers one by one at their lowest free offset.

    The placed buffers alive at the same time as the next one are found through a table
    of the (compressed) time segments each placed buffer covers, instead of testing every
    placed buffer: the work follows the lifetimes, not the square of the buffer count
    (a 10,000-node chain)."""
    offsets: dict = {}
    times = sorted({t for b in ordered for t in (b.start, b.end)})
    segment = {t: index for index, t in enumerate(times)}
    covering: list[list[int]] = [[] for _ in times]   # segment -> positions of placed buffers
    empty: list[int] = []     # placed buffers with start >= end: tested one by one, as before
    for position, buffer in enumerate(ordered):
        first, last = segment[buffer.start], segment[buffer.end]
        if first < last:
            neighbours = {p for s in range(first, last) for p in covering[s]}
            neighbours.update(p for p in empty if ordered[p].overlaps_in_time(buffer))
        else:
            neighbours = {p for p in range(position) if ordered[p].overlaps_in_time(buffer)}
        ranges = [(offsets[ordered[p].id], offsets[ordered[p].id] + ordered[p].packed_size)
                  for p in neighbours]
        offsets[buffer.id] = lowest_offset(buffer, ranges)
        for s in range(first, last):
            covering[s].append(position)
        if first >= last:
            empty.append(position)
    return offsets


@allocator("greedy")
def allocate_greedy(buffers: list[Buffer], capacity: int | None = None,
                    time_limit: float = 60.0, seed: int = 0) -> Plan:
    """Greedy by size (TFLM GreedyMemoryPlanner's strategy)."""
    started = time.perf_counter()
    return make_plan(buffers, place_in_order(greedy_order(buffers)), "greedy", started, capacity)
