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
a fixed number of seeded perturbations of them, are tried; the smallest arena wins. The
search stops early only when the best equals a proved lower bound (:func:`pair_lower_bound`),
so the answer is the same as with every round.
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
    """Lowest aligned offset >= 0 inside none of the open ``intervals``: one sweep in order of
    their lower ends. An interval that starts at or above the candidate cannot hold it, nor
    can any after it; one below it that reaches past it moves it to its aligned upper end,
    which no earlier interval reaches (each ended at or below the candidate of its turn).
    The result is the unique least such offset (the fixed point the former repeated passes
    found, in O(n log n) instead of a pass per move)."""
    candidate = 0
    for low, high in sorted(intervals):
        if low >= candidate:
            break
        if high > candidate:
            candidate = align_up(high, alignment)
    return candidate


def _alive_pairs(buffers: list[Buffer]) -> list[tuple[Buffer, Buffer]]:
    """Every pair of distinct buffers alive together (``overlaps_in_time``), once each: a sweep
    in order of start times keeps the buffers still alive (the work follows the pairs, not the
    square of the buffer count); buffers with ``start >= end`` are tested one by one."""
    import heapq
    timed = sorted((b for b in buffers if b.start < b.end), key=lambda b: b.start)
    empty = [b for b in buffers if b.start >= b.end]
    pairs: list[tuple[Buffer, Buffer]] = []
    alive: list[tuple[int, int, Buffer]] = []        # (end, tie, buffer), the earliest end first
    for tie, buffer in enumerate(timed):
        while alive and alive[0][0] <= buffer.start:
            heapq.heappop(alive)
        pairs.extend((other, buffer) for _, _, other in alive)
        heapq.heappush(alive, (buffer.end, tie, buffer))
    for index, buffer in enumerate(empty):
        pairs.extend((buffer, other) for other in [*timed, *empty[index + 1:]] if buffer.overlaps_in_time(other))
    return pairs


def _relative_intervals(buffers: list[Buffer], pairs: dict, alignment: int) -> dict:
    """For every buffer, ``(other id, low, high)`` of every other buffer alive with it: the
    interval :func:`_forbidden` gives (without a reservation) is ``(base + low, base + high)``
    when that other is placed at ``base``. Computed once per :func:`allocate_paired`, read by
    every round (the order of the entries does not matter: :func:`lowest_free` sorts)."""
    relative: dict = {buffer.id: [] for buffer in buffers}
    for first, second in _alive_pairs(buffers):
        for buffer, other in ((first, second), (second, first)):
            (low, high), = _forbidden(buffer, other, 0, pairs, None, alignment)
            relative[buffer.id].append((other.id, low, high))
    return relative


def place(ordered: list[Buffer], pairs: dict, alignment: int, reserve: bool, relative: dict | None = None) -> dict:
    """Offsets from placing ``ordered`` one by one (see the module docstring). Only placed
    buffers alive with the buffer (or with the output it reserves room for) can forbid an
    offset, and :func:`lowest_free` does not depend on the order of the intervals.
    ``relative``: :func:`_relative_intervals` of these buffers (computed when not given)."""
    if relative is None:
        relative = _relative_intervals(ordered, pairs, alignment)
    output_of_input = {inp: out for out, inp in pairs}
    by_id = {b.id: b for b in ordered}
    offsets: dict = {}
    for buffer in ordered:
        pending = output_of_input.get(buffer.id)
        if not (reserve and pending is not None and pending not in offsets):
            intervals = [(offsets[other] + low, offsets[other] + high)
                         for other, low, high in relative[buffer.id] if other in offsets]
        else:                             # room for the output below the input
            reserve_for = by_id[pending]
            distance = min(align_up(pairs[reserve_for.id, buffer.id], alignment), reserve_for.packed_size)
            intervals = [(-1, distance)]
            others = {other for other, _, _ in [*relative[buffer.id], *relative[reserve_for.id]] if other in offsets}
            for other in others:
                intervals += _forbidden(buffer, by_id[other], offsets[other], pairs, reserve_for, alignment)
        offsets[buffer.id] = lowest_free(intervals, alignment)
    return offsets


PERTURBATION_ROUNDS = 64
PLACEMENT_WORK = 32_000_000   # buffer-pair checks all the rounds may make together


def perturbation_rounds(buffer_count: int) -> int:
    """Rounds of perturbation: :data:`PERTURBATION_ROUNDS`, fewer for very large graphs (one
    round checks every pair of buffers: the work grows with the square of their number)."""
    return max(1, min(PERTURBATION_ROUNDS, PLACEMENT_WORK // max(1, buffer_count) ** 2))


def pair_lower_bound(buffers: list[Buffer], pairs: dict, alignment: int) -> int:
    """A proved lower bound of every arena these rules allow: the largest buffer, and at every
    step the packed bytes alive minus, for every pair alive there, the most its output may
    overlap its input (``min(size_out - distance', size_in)``; other buffers alive together
    never share a byte, so the union of the step's buffers is at least that). A greedy result
    equal to it is optimal: no perturbation round can beat it."""
    by_id = {b.id: b for b in buffers}
    alive = [b for b in buffers if b.start < b.end]
    steps = sorted({b.start for b in alive})
    change = dict.fromkeys(steps, 0)
    ends: dict[int, int] = {}
    for buffer in alive:
        change[buffer.start] += buffer.packed_size
        ends[buffer.end] = ends.get(buffer.end, 0) - buffer.packed_size
    for (output_id, input_id), distance in pairs.items():
        output, source = by_id.get(output_id), by_id.get(input_id)
        if output is None or source is None or output is source:
            continue
        first, last = max(output.start, source.start), min(output.end, source.end)
        if first < last:
            kept = min(align_up(distance, alignment), output.packed_size)
            shared = min(output.packed_size - kept, source.packed_size)
            change[first] -= shared
            ends[last] = ends.get(last, 0) + shared
    bound, total = max((b.packed_size for b in buffers), default=0), 0
    for step in sorted({*steps, *ends}):
        total += ends.get(step, 0) + change.get(step, 0)
        if step in change:
            bound = max(bound, total)
    return bound


def allocate_paired(buffers: list[Buffer], pairs: list[OverlapPair], alignment: int,
                    time_budget: float = 60.0, seed: int = 0) -> dict:
    """The best offsets found over the orders and :func:`perturbation_rounds` seeded
    perturbations (module docstring). The result depends on the seed and the graph only, not
    on the machine's speed; ``time_budget`` is a last-resort cap that stops early. The search
    stops as soon as the best reaches :func:`pair_lower_bound` (nothing after it could be
    smaller, so the result is the one all the rounds give)."""
    pair_map = {(p.output, p.input): p.distance for p in pairs}
    relative = _relative_intervals(buffers, pair_map, alignment)
    bound = pair_lower_bound(buffers, pair_map, alignment)
    orders = [sorted(buffers, key=lambda b: (-b.packed_size, b.start)),
              sorted(buffers, key=lambda b: (-b.packed_size, -b.start)),
              sorted(buffers, key=lambda b: (b.start, -b.packed_size)),
              sorted(buffers, key=lambda b: (-b.start, -b.packed_size)),
              sorted(buffers, key=lambda b: (-(b.end - b.start) * b.packed_size, b.start))]
    best, best_size = None, None
    for ordered in orders:
        for reserve in (True, False):
            offsets = place(ordered, pair_map, alignment, reserve, relative)
            size = arena_size_of(buffers, offsets)
            if best_size is None or size < best_size:
                best, best_size = offsets, size
            if best_size <= bound:
                return best or {}
    assert best_size is not None  # the two greedy orders above always ran
    generator = random.Random(seed)
    deadline = time.perf_counter() + time_budget
    for _ in range(perturbation_rounds(len(buffers)) if buffers else 0):
        if time.perf_counter() > deadline or best_size <= bound:
            break
        keys = {b.id: -b.packed_size * generator.uniform(0.7, 1.3) for b in buffers}
        direction = generator.choice((1, -1))
        ordered = sorted(buffers, key=lambda b: (keys[b.id], direction * b.start))
        offsets = place(ordered, pair_map, alignment, generator.random() < 0.7, relative)
        size = arena_size_of(buffers, offsets)
        if size < best_size:
            best, best_size = offsets, size
    return best or {}
