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
    """Offsets from placing ``ordered`` buffers one by one at their lowest free offset."""
    offsets: dict = {}
    placed: list[Buffer] = []
    for buffer in ordered:
        ranges = [(offsets[p.id], offsets[p.id] + p.packed_size)
                  for p in placed if p.overlaps_in_time(buffer)]
        offsets[buffer.id] = lowest_offset(buffer, ranges)
        placed.append(buffer)
    return offsets


@allocator("greedy")
def allocate_greedy(buffers: list[Buffer], capacity: int | None = None,
                    time_limit: float = 60.0, seed: int = 0) -> Plan:
    """Greedy by size (TFLM GreedyMemoryPlanner's strategy)."""
    started = time.perf_counter()
    return make_plan(buffers, place_in_order(greedy_order(buffers)), "greedy", started, capacity)
