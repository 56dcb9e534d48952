"""Exact allocator: a CP-SAT model (OR-Tools) of the packing, minimised or decided.

Variables: offset_b in [0, limit - packed_size_b], offset_b % alignment_b == 0
(offset_b = alignment_b * slot_b). Constraint: NoOverlap2D over rectangles with the fixed
time interval [start_b, end_b) on x and the interval [offset_b, offset_b + packed_size_b)
on y. Without a capacity: minimise arena >= offset_b + packed_size_b (arena >= live-set
bound is added as a redundant cut). With a capacity: limit = capacity and the solver stops
at the first packing (a decision problem). The greedy plan seeds the search as a hint.
Proof status comes from the solver (OPTIMAL / FEASIBLE / INFEASIBLE / UNKNOWN), and the
best objective bound it proves is reported as the proven lower bound.
"""
from __future__ import annotations

import logging
import threading
import time

from ...extras import require
from ..bounds import live_set_bound
from ..buffers import PROOF_FEASIBLE, PROOF_INFEASIBLE, PROOF_NONE, PROOF_OPTIMAL, Buffer, Plan
from .base import allocator, make_plan
from .greedy import allocate_greedy

logger = logging.getLogger(__name__)


def _cp_model():
    """OR-Tools' CP-SAT (the ``exact`` extra)."""
    return require("ortools.sat.python.cp_model", "exact", "the exact allocator (or choose --allocator greedy / search)")


def _build(cp_model, buffers: list[Buffer], limit: int, minimise: bool, hint: dict):
    model = cp_model.CpModel()
    offsets, x_intervals, y_intervals = {}, [], []
    for buffer in buffers:
        slots = (limit - buffer.packed_size) // buffer.alignment
        slot = model.NewIntVar(0, max(slots, 0), f"slot_{buffer.id}")
        offset = model.NewIntVar(0, max(limit - buffer.packed_size, 0), f"offset_{buffer.id}")
        model.Add(offset == buffer.alignment * slot)
        x_intervals.append(model.NewFixedSizeIntervalVar(buffer.start, buffer.end - buffer.start,
                                                         f"time_{buffer.id}"))
        y_intervals.append(model.NewFixedSizeIntervalVar(offset, buffer.packed_size,
                                                         f"space_{buffer.id}"))
        offsets[buffer.id] = offset
        if buffer.id in hint and hint[buffer.id] + buffer.packed_size <= limit:
            model.AddHint(offset, hint[buffer.id])
            model.AddHint(slot, hint[buffer.id] // buffer.alignment)
    model.AddNoOverlap2D(x_intervals, y_intervals)
    arena = None
    if minimise:
        arena = model.NewIntVar(live_set_bound(buffers).bytes, limit, "arena")
        for buffer in buffers:
            model.Add(arena >= offsets[buffer.id] + buffer.packed_size)
        model.Minimize(arena)
    return model, offsets, arena


def _solve(solver, model, stop: threading.Event | None):
    """solver.Solve(model), stopped early when ``stop`` is set."""
    if stop is None:
        return solver.Solve(model)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if stop.wait(0.05):
                solver.StopSearch()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        return solver.Solve(model)
    finally:
        done.set()
        watcher.join()


@allocator("exact")
def allocate_exact(buffers: list[Buffer], capacity: int | None = None,
                   time_limit: float = 60.0, seed: int = 0,
                   hint: dict | None = None, workers: int = 2,
                   stop: threading.Event | None = None) -> Plan:
    """Minimise the arena (no capacity) or find a packing under ``capacity`` with CP-SAT.
    Setting ``stop`` from another thread ends the solve early (with what it has)."""
    started = time.perf_counter()
    cp_model = _cp_model()
    if hint is None:
        hint = allocate_greedy(buffers).offsets
    greedy_size = max((hint[b.id] + b.packed_size for b in buffers), default=0)
    minimise = capacity is None
    limit = greedy_size if capacity is None else capacity
    if not buffers or limit < max(b.packed_size for b in buffers):
        return make_plan(buffers, hint, "exact", started, capacity,
                         proof=PROOF_INFEASIBLE if buffers else PROOF_OPTIMAL)
    model, offsets, arena = _build(cp_model, buffers, limit, minimise, hint)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(time_limit, 0.01)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = _solve(solver, model, stop)
    logger.info("CP-SAT: %s after %.1f s", solver.StatusName(status), solver.WallTime())
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        found = {b.id: solver.Value(offsets[b.id]) for b in buffers}
        proof = PROOF_OPTIMAL if status == cp_model.OPTIMAL and minimise else PROOF_FEASIBLE
        proven = int(solver.BestObjectiveBound()) if minimise else None
        if status == cp_model.OPTIMAL and minimise:
            proven = int(solver.ObjectiveValue())
        return make_plan(buffers, found, "exact", started, capacity, proof, proven)
    proof = PROOF_INFEASIBLE if status == cp_model.INFEASIBLE else PROOF_NONE
    proven = capacity + 1 if proof == PROOF_INFEASIBLE and capacity is not None else None
    return make_plan(buffers, hint, "exact", started, capacity, proof, proven)
