"""The portfolio planner: greedy, then branch and bound and CP-SAT side by side; best wins.

    plan_buffers(buffers, capacity=None, time_limit=60) -> Plan

1. Greedy by size. Done when it fits the capacity, or (without a capacity) reaches the
   live-set bound (then it is optimal).
2. With a capacity below the live-set bound nothing can fit: return greedy, marked as
   proven not to fit (see :mod:`.fit` for the message).
3. Otherwise run the branch-and-bound search (this thread) and CP-SAT (one worker, in a
   second thread: the solver releases the GIL) at the same time, within the time limit.
   The first to fit the capacity (or, without one, to reach the bound) stops the other.
   The smallest arena wins; a proof of infeasibility or optimality from either is kept.
The returned plan always carries the capacity, so ``Plan.fits`` is never a false claim.
"""
from __future__ import annotations

import logging
import threading
import time

from ..extras import available, install_line
from .allocators.base import ALLOCATORS, make_plan
from .allocators.exact import allocate_exact
from .allocators.greedy import allocate_greedy
from .allocators.search import allocate_search
from .buffers import PROOF_FEASIBLE, PROOF_INFEASIBLE, PROOF_OPTIMAL, Buffer, Plan

logger = logging.getLogger(__name__)


def plan_buffers(buffers: list[Buffer], capacity: int | None = None, time_limit: float = 60.0,
                 seed: int = 0) -> Plan:
    """The best plan the portfolio finds within ``time_limit`` seconds (see module docstring)."""
    started = time.perf_counter()
    greedy = allocate_greedy(buffers, capacity)
    if greedy.arena_size <= greedy.lower_bound:     # at the bound: optimal
        return _relabel(buffers, greedy, started, "portfolio (greedy)", PROOF_OPTIMAL)
    if capacity is not None and (greedy.fits or greedy.lower_bound > capacity):
        proof = PROOF_FEASIBLE if greedy.fits else PROOF_INFEASIBLE   # bound > capacity
        return _relabel(buffers, greedy, started, "portfolio (greedy)", proof)
    plans = _race(buffers, capacity, time_limit, seed, greedy.offsets)
    best = min(plans, key=lambda p: (p.arena_size, p.allocator != "search"))
    proof = next((p.proof for p in plans if p.proof in (PROOF_INFEASIBLE, PROOF_OPTIMAL)),
                 best.proof)
    if proof == PROOF_INFEASIBLE and best.fits:   # a fit beats a (would-be) contradicting proof
        proof = best.proof
    proven = max((p.proven_lower_bound or 0 for p in plans), default=0) or None
    plan = _relabel(buffers, best, started, f"portfolio ({best.allocator})", proof, proven)
    plan.notes = [f"{p.allocator}: {p.arena_size} bytes, {p.proof}, {p.seconds:.1f} s"
                  for p in [greedy, *plans]]
    return plan


def _race(buffers, capacity, time_limit, seed, hint) -> list[Plan]:
    """Branch and bound here and CP-SAT in a thread; whichever finishes first stops the other."""
    stop = threading.Event()
    results: list[Plan] = []

    def run_exact() -> None:
        plan = allocate_exact(buffers, capacity, time_limit, seed, hint=hint, workers=1, stop=stop)
        results.append(plan)
        if plan.fits and capacity is not None or plan.proof in (PROOF_OPTIMAL, PROOF_INFEASIBLE):
            stop.set()

    if not available("exact"):   # OR-Tools absent: branch and bound alone (it proves optimality too)
        logger.info("portfolio: the exact allocator is not installed (%s)", install_line("exact"))
        return [allocate_search(buffers, capacity, time_limit, seed, stop=stop)]
    thread = threading.Thread(target=run_exact, name="cp-sat", daemon=True)
    thread.start()
    search = allocate_search(buffers, capacity, time_limit, seed, stop=stop)
    stop.set()
    thread.join()
    logger.info("portfolio: search %d bytes (%s), exact %s", search.arena_size, search.proof,
                [(p.arena_size, p.proof) for p in results])
    return [search, *results]


def _relabel(buffers, plan: Plan, started: float, name: str, proof: str,
             proven: int | None = None) -> Plan:
    return make_plan(buffers, plan.offsets, name, started, plan.capacity, proof,
                     proven if proven is not None else plan.proven_lower_bound)


def allocate(buffers: list[Buffer], allocator: str = "portfolio", capacity: int | None = None,
             time_limit: float = 60.0, seed: int = 0) -> Plan:
    """Run the named allocator (``portfolio`` or one of :data:`ALLOCATORS`)."""
    if allocator == "portfolio":
        return plan_buffers(buffers, capacity, time_limit, seed)
    return ALLOCATORS[allocator](buffers, capacity=capacity, time_limit=time_limit, seed=seed)
