"""Memory-aware execution order: the topological order with the smallest live-set peak.

Input: a graph, the alignment, the arena rule for graph inputs / outputs and the scratch
callback (as :mod:`.liveness`). Output: :class:`Schedule` (order, its peak, the file
order's peak, whether the order is proved optimal).

Memory model (the same as the live-set bound of :mod:`.bounds`): with S the set of nodes
already run,

    live(S)        = sum of packed sizes of arena values produced in S (or graph inputs)
                     that a node outside S still reads, or that are graph outputs
    step(S, k)     = live(S) + outputs(k) + scratch(k)      (running node k next)
    peak(order)    = max over its steps of step(S, k)

Search: dynamic programming over the down-sets of the graph (the states S, level by level
by |S|). For each state only the best ``(peak so far, live)`` is kept: two orders reaching
the same S continue identically, so this is exact. When a level holds more than
``beam_width`` states only the best are kept (a beam search: a good heuristic, no longer a
proof) and the result says so. The file order is always a candidate, so the chosen order is
never worse than it.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from ..ir import Graph, Node
from .bounds import live_set_bound
from .buffers import align_up
from .liveness import in_arena, tensor_lives, to_buffers


@dataclass
class Schedule:
    """A node order and its activation peak."""
    order: list[str]
    peak: int
    file_order_peak: int
    exact: bool
    states: int = 0
    seconds: float = 0.0


@dataclass
class _Problem:
    """The scheduling problem of one graph (what the search reads)."""
    predecessors: list[int]       # bitmask of nodes each node needs
    produced: list[int]           # packed bytes each node writes (outputs + scratch)
    kept: list[int]               # packed bytes of its outputs that stay live after its step
    frees: list[list[tuple[int, int]]]   # per node: (consumer mask, bytes) of its input values
    initial: int                  # graph inputs live before step 0


def order_peak(graph: Graph, order: list[str], alignment: int, io_in_arena: bool,
               scratch_bytes: Callable[[Node], int] | None) -> int:
    """The live-set peak of ``order`` (no reuse)."""
    lives = tensor_lives(graph, order, io_in_arena=io_in_arena, scratch_bytes=scratch_bytes)
    return live_set_bound(to_buffers(lives, alignment)).bytes


def _problem(graph: Graph, alignment: int, io_in_arena: bool, scratch_bytes) -> _Problem:
    nodes = graph.nodes
    index = {id(node): i for i, node in enumerate(nodes)}
    outputs = {id(v) for v in graph.outputs}
    predecessors, produced, kept = [], [], []
    frees: list[list[tuple[int, int]]] = [[] for _ in nodes]
    consumers: dict[int, int] = {}
    for node in nodes:
        for value in node.inputs:
            if value is not None:
                consumers[id(value)] = consumers.get(id(value), 0) | (1 << index[id(node)])
    for i, node in enumerate(nodes):
        mask = 0
        for value in node.inputs:
            if value is not None and value.producer is not None:
                mask |= 1 << index[id(value.producer)]
        predecessors.append(mask)
        arena_outputs = [v for v in node.outputs if in_arena(v, graph, io_in_arena)]
        scratch = int(scratch_bytes(node)) if scratch_bytes else 0
        produced.append(sum(align_up(v.nbytes, alignment) for v in arena_outputs)
                        + (align_up(scratch, alignment) if scratch > 0 else 0))
        kept.append(sum(align_up(v.nbytes, alignment) for v in arena_outputs
                        if id(v) in consumers or id(v) in outputs))
        for value in {id(v): v for v in node.inputs if v is not None}.values():
            if in_arena(value, graph, io_in_arena) and id(value) not in outputs:
                frees[i].append((consumers[id(value)], align_up(value.nbytes, alignment)))
    initial = sum(align_up(v.nbytes, alignment) for v in graph.inputs if in_arena(v, graph, io_in_arena))
    return _Problem(predecessors, produced, kept, frees, initial)


def _expand(problem: _Problem, state: int, live: int, node: int) -> tuple[int, int, int]:
    """(next state, step bytes, live after) for running ``node`` from ``state``."""
    step = live + problem.produced[node]
    after_state = state | (1 << node)
    freed = sum(size for mask, size in problem.frees[node] if mask & ~after_state == 0)
    return after_state, step, live + problem.kept[node] - freed


def _successors(problem: _Problem, count: int) -> list[list[int]]:
    successors: list[list[int]] = [[] for _ in range(count)]
    for node, mask in enumerate(problem.predecessors):
        while mask:
            low = mask & -mask
            successors[low.bit_length() - 1].append(node)
            mask ^= low
    return successors


def _ready_after(problem: _Problem, successors: list[list[int]], ready: tuple[int, ...],
                 node: int, after: int) -> tuple[int, ...]:
    """The nodes runnable from state ``after`` (= the state ``ready`` belongs to, plus
    ``node``): ``ready`` without ``node``, plus the successors ``node`` was the last wait of.
    Kept incrementally (sorted, as the full scan would find them), so a level costs its
    ready nodes, not every node of the graph: linear time on a chain."""
    released = [s for s in successors[node] if not problem.predecessors[s] & ~after]
    if not released:
        return tuple(n for n in ready if n != node)
    return tuple(sorted({n for n in ready if n != node} | set(released)))


def _search(problem: _Problem, count: int, beam_width: int, deadline: float):
    """(history, exact, states, timed out): the levels of the dynamic programme."""
    successors = _successors(problem, count)
    level = {0: (0, problem.initial, None, None)}   # state -> (peak, live, parent, node)
    ready_of = {0: tuple(n for n in range(count) if not problem.predecessors[n])}
    history = [level]
    exact, states, timed_out = True, 1, False
    for _ in range(count):
        following: dict[int, tuple] = {}
        following_ready: dict[int, tuple[int, ...]] = {}
        for state, (peak, live, _, _) in level.items():
            for node in ready_of[state]:
                after, step, live_after = _expand(problem, state, live, node)
                candidate = (max(peak, step), live_after, state, node)
                if after not in following or candidate[:2] < following[after][:2]:
                    following[after] = candidate
                    if after not in following_ready:
                        following_ready[after] = _ready_after(problem, successors,
                                                               ready_of[state], node, after)
        states += len(following)
        if len(following) > beam_width or time.perf_counter() > deadline:
            exact = exact and len(following) <= beam_width
            keep = sorted(following.items(), key=lambda item: item[1][:2])[:max(1, beam_width)]
            if time.perf_counter() > deadline:
                exact, keep, timed_out = False, keep[:1], True
            following = dict(keep)
        history.append(following)
        level = following
        ready_of = {state: following_ready[state] for state in following}
    return history, exact, states, timed_out


# Searched orders by problem (node indices, exact, states): a search of the same problem gives
# the same order unless its deadline cut it short, and the pipeline schedules one graph more
# than once (the levels split plans its choice, then the driver plans the deployment: 2.5 s
# each on a 256 U-Net). Only searches that ended before their deadline are kept.
_SEARCHED: OrderedDict[tuple, tuple[list[int], bool, int]] = OrderedDict()
SEARCHED_KEPT = 16


def _problem_key(problem: _Problem, count: int, beam_width: int) -> tuple:
    return (count, beam_width, problem.initial, tuple(problem.predecessors), tuple(problem.produced),
            tuple(problem.kept), tuple(tuple(frees) for frees in problem.frees))


def _searched_order(problem: _Problem, count: int, beam_width: int, deadline: float) -> tuple[list[int], bool, int]:
    key = _problem_key(problem, count, beam_width)
    if key in _SEARCHED:
        _SEARCHED.move_to_end(key)
        return _SEARCHED[key]
    history, exact, states, timed_out = _search(problem, count, beam_width, deadline)
    found = (_walk_back(history, count), exact, states)
    if not timed_out:
        _SEARCHED[key] = found
        while len(_SEARCHED) > SEARCHED_KEPT:
            _SEARCHED.popitem(last=False)
    return found


def _walk_back(history: list[dict], count: int) -> list[int]:
    state = next(iter(history[-1]))
    order = []
    for depth in range(count, 0, -1):
        _, _, parent, node = history[depth][state]
        order.append(node)
        state = parent
    return order[::-1]


def schedule(graph: Graph, *, alignment: int = 16, io_in_arena: bool = True,
             scratch_bytes: Callable[[Node], int] | None = None, beam_width: int = 256,
             time_limit: float = 10.0) -> Schedule:
    """The memory-aware order (module docstring); never worse than the file order."""
    started = time.perf_counter()
    file_order = [node.name for node in graph.nodes]
    file_peak = order_peak(graph, file_order, alignment, io_in_arena, scratch_bytes)
    count = len(graph.nodes)
    if count == 0:
        return Schedule(file_order, file_peak, file_peak, True)
    problem = _problem(graph, alignment, io_in_arena, scratch_bytes)
    indices, exact, states = _searched_order(problem, count, beam_width, started + time_limit)
    order = [graph.nodes[i].name for i in indices]
    peak = order_peak(graph, order, alignment, io_in_arena, scratch_bytes)
    if peak >= file_peak:
        order, peak = file_order, file_peak
    return Schedule(order, peak, file_peak, exact, states, time.perf_counter() - started)
