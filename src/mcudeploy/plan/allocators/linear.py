"""Linear baseline allocator: every buffer gets its own slot, no reuse.

    offset_i = align_up(sum of packed sizes of buffers 0..i-1, alignment_i)

The arena is (about) the sum of all sizes: the upper reference every planner must beat.
"""
from __future__ import annotations

import time

from ..buffers import Buffer, Plan, align_up
from .base import allocator, make_plan


@allocator("linear")
def allocate_linear(buffers: list[Buffer], capacity: int | None = None,
                    time_limit: float = 60.0, seed: int = 0) -> Plan:
    """Place the buffers one after another in input order."""
    started = time.perf_counter()
    offsets, top = {}, 0
    for buffer in buffers:
        offsets[buffer.id] = align_up(top, buffer.alignment)
        top = offsets[buffer.id] + buffer.packed_size
    return make_plan(buffers, offsets, "linear", started, capacity)
