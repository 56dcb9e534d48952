"""Improving search allocator: greedy first, then the branch-and-bound decision search.

With a capacity C: return greedy when it fits, else ask the search for a packing under C.
Without one: start from greedy (size G) and look for smaller arenas, first exactly at the
live-set bound L (the search stops there: nothing can be smaller), then by bisection on
[lo, best - 1], where lo rises past every target that failed:

    target = (lo + best - 1) // 2;  found -> best = its arena;  none -> lo = target + 1

Each attempt gets half the remaining time. Only failures proven by exhausting the search
raise the proven lower bound (and so can prove the result optimal).
"""
from __future__ import annotations

import threading
import time

from ..bounds import live_set_bound
from ..buffers import PROOF_FEASIBLE, PROOF_INFEASIBLE, PROOF_NONE, PROOF_OPTIMAL, Buffer, Plan
from .base import allocator, make_plan
from .branch_and_bound import search_fit
from .greedy import allocate_greedy


@allocator("search")
def allocate_search(buffers: list[Buffer], capacity: int | None = None,
                    time_limit: float = 60.0, seed: int = 0,
                    stop: threading.Event | None = None) -> Plan:
    """Greedy, then branch and bound until the bound, the capacity or the time limit."""
    started = time.perf_counter()
    deadline = started + time_limit
    greedy = allocate_greedy(buffers)
    if capacity is not None:
        if greedy.arena_size <= capacity:
            return make_plan(buffers, greedy.offsets, "search", started, capacity, PROOF_FEASIBLE)
        if greedy.lower_bound > capacity:
            return make_plan(buffers, greedy.offsets, "search", started, capacity,
                             PROOF_INFEASIBLE)
        offsets, proven = search_fit(buffers, capacity, deadline, seed, stop)
        if offsets is not None:
            return make_plan(buffers, offsets, "search", started, capacity, PROOF_FEASIBLE)
        return make_plan(buffers, greedy.offsets, "search", started, capacity,
                         PROOF_INFEASIBLE if proven else PROOF_NONE,
                         capacity + 1 if proven else None)
    return _minimise(buffers, greedy.offsets, greedy.arena_size, started, deadline, seed, stop)


def _minimise(buffers, offsets, best, started, deadline, seed, stop) -> Plan:
    bound = live_set_bound(buffers).bytes
    proven_low = low = bound    # proven_low: proven; low: also counts unproven failures
    target = bound
    while best > low and time.perf_counter() < deadline and not (stop and stop.is_set()):
        share = (deadline - time.perf_counter()) / 2
        found, proven = search_fit(buffers, target, time.perf_counter() + share, seed, stop)
        if found is not None:
            offsets = found
            best = max(found[b.id] + b.packed_size for b in buffers)
        else:
            low = target + 1
            if proven:   # no packing under target => none under anything smaller
                proven_low = max(proven_low, target + 1)
        target = (low + best - 1) // 2
    proof = PROOF_OPTIMAL if best <= proven_low else PROOF_NONE
    return make_plan(buffers, offsets, "search", started, None, proof,
                     proven_low if proven_low > bound else None)
