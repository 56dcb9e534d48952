"""First-fit placement of buffers with overlap pairs (in-place / partial-overlap reuse).

Input: :class:`~.buffers.Buffer` s (alias groups) and :class:`~.reuse.OverlapPair` s
``(output, input, distance)``. Output: offsets. Two buffers alive together may not share a
byte, except a pair's output, which may start at ``input offset - distance`` or lower:

    plain:  x  not in  (h - size_g, h + size_h)          (g placed at x, h at offset h)
    g = output of pair with h:  x  not in  (h - distance', h + size_h)
    g = input of pair with h:   x  not in  (h - size_g,     h + distance')
    distance' = min(distance rounded up to the alignment, size of the output)

Each buffer goes to the lowest aligned offset outside every forbidden open interval.
``reserve=True``: the input of a pair whose output is not placed yet also keeps ``distance``
bytes free below itself (from offset 0 and from buffers alive with the output), so the
output can start there.
Several orders (largest first, earliest first, latest first: a chain of overlapping
ops placed backwards stacks each input just above its output) with and without the reservation, plus
seeded perturbations of them within a time budget, are tried; the smallest arena wins.
"""
from __future__ import annotations

import random
import time

from .buffers import Buffer, align_up, arena_size_of
from .reuse import OverlapPair


def _forbidden(buffer: Buffer, other: Buffer, base: int, pairs: dict, reserve_for: Buffer | None,
               alignment: int) -> list[tuple[int, int]]:
    """Open intervals of offsets ``buffer`` may not take because of ``other`` placed at ``base``."""
    intervals = []
    if buffer.overlaps_in_time(other):
        if (buffer.id, other.id) in pairs:          # buffer is the output, other its input
            distance = min(align_up(pairs[buffer.id, other.id], alignment), buffer.packed_size)
            intervals.append((base - distance, base + other.packed_size))
        elif (other.id, buffer.id) in pairs:        # buffer is the input, other its output
            distance = min(align_up(pairs[other.id, buffer.id], alignment), other.packed_size)
            intervals.append((base - buffer.packed_size, base + distance))
        else:
            intervals.append((base - buffer.packed_size, base + other.packed_size))
    if reserve_for is not None and reserve_for.overlaps_in_time(other):
        # keep [x - distance, x) free of buffers alive with the pending output
        distance = min(align_up(pairs[reserve_for.id, buffer.id], alignment), reserve_for.packed_size)
        intervals.append((base, base + other.packed_size + distance))
    return intervals


def lowest_free(intervals: list[tuple[int, int]], alignment: int) -> int:
    """Lowest aligned offset >= 0 inside none of the open ``intervals``."""
    candidate = 0
    moved = True
    while moved:
        moved = False
        for low, high in intervals:
            if low < candidate < high:
                candidate = align_up(high, alignment)
                moved = True
    return candidate


def place(ordered: list[Buffer], pairs: dict, alignment: int, reserve: bool) -> dict:
    """Offsets from placing ``ordered`` one by one (see the module docstring)."""
    output_of_input = {inp: out for out, inp in pairs}
    by_id = {b.id: b for b in ordered}
    offsets: dict = {}
    placed: list[Buffer] = []
    for buffer in ordered:
        pending = output_of_input.get(buffer.id)
        reserve_for = by_id[pending] if reserve and pending is not None and pending not in offsets else None
        intervals = []
        if reserve_for is not None:       # room for the output below the input
            distance = min(align_up(pairs[reserve_for.id, buffer.id], alignment), reserve_for.packed_size)
            intervals.append((-1, distance))
        for other in placed:
            intervals += _forbidden(buffer, other, offsets[other.id], pairs, reserve_for, alignment)
        offsets[buffer.id] = lowest_free(intervals, alignment)
        placed.append(buffer)
    return offsets


def allocate_paired(buffers: list[Buffer], pairs: list[OverlapPair], alignment: int,
                    time_budget: float = 0.5, seed: int = 0) -> dict:
    """The best offsets found over the orders and perturbations (module docstring)."""
    pair_map = {(p.output, p.input): p.distance for p in pairs}
    orders = [sorted(buffers, key=lambda b: (-b.packed_size, b.start)),
              sorted(buffers, key=lambda b: (-b.packed_size, -b.start)),
              sorted(buffers, key=lambda b: (b.start, -b.packed_size)),
              sorted(buffers, key=lambda b: (-b.start, -b.packed_size)),
              sorted(buffers, key=lambda b: (-(b.end - b.start) * b.packed_size, b.start))]
    best, best_size = None, None
    for ordered in orders:
        for reserve in (True, False):
            offsets = place(ordered, pair_map, alignment, reserve)
            size = arena_size_of(buffers, offsets)
            if best_size is None or size < best_size:
                best, best_size = offsets, size
    generator = random.Random(seed)
    deadline = time.perf_counter() + time_budget
    while buffers and time.perf_counter() < deadline:
        keys = {b.id: -b.packed_size * generator.uniform(0.7, 1.3) for b in buffers}
        direction = generator.choice((1, -1))
        ordered = sorted(buffers, key=lambda b: (keys[b.id], direction * b.start))
        offsets = place(ordered, pair_map, alignment, generator.random() < 0.7)
        size = arena_size_of(buffers, offsets)
        if size < best_size:
            best, best_size = offsets, size
    return best or {}
