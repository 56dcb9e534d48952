"""Decision search: does a packing of the buffers fit under a capacity? (MiniMalloc-style)

Input: buffers (packed sizes, alignments, [start, end)), a capacity, a node limit and a
deadline. Output: offsets, or a proof that none fit, or "gave up" (limit/deadline).

The search follows the ideas of Moffitt, "MiniMalloc: A Lightweight Memory Allocator for
Hardware-Accelerated Machine Learning" (ASPLOS 2023); the code is our own.

* Canonical solutions. Any packing can be pushed down until every buffer sits at 0 or on
  top of a buffer alive at the same time. Such a packing is produced by placing buffers in
  order of increasing offset, each at its *minimum offset*
      min_offset(b) = align_up(max(top of placed buffers alive with b), alignment(b)).
  So a search node only picks *which* buffer goes next, and the (offset, preorder index)
  of successive picks is lexicographically increasing (no permutation is visited twice).
* Dominance. With h = min over unplaced b of (min_offset(b) + size(b)), a candidate at an
  offset >= h is skipped: the buffer reaching h could go entirely below it, so some other
  branch covers that packing.
* Section inference. Time is cut into sections at every start/end step. The unplaced
  buffers of section s are all alive together, so they stack above
      floor(s) = max(offset of the last placement, min over them of min_offset)
  and  floor(s) + sum of their sizes <= capacity  must hold; else backtrack. Its cheap
  corollary prunes whole candidate lists: an offset o needs o + max_s total(s) <= capacity.
* Hatless pruning. If the buffer just tried has no unplaced buffer alive with it, nothing
  else at this node can do better, so a failure there ends the node.
* Dynamic decomposition. When no unplaced buffer is alive across a section boundary, the
  two sides no longer interact: each is searched on its own (and re-ranked), so failing
  on one side never re-enumerates the other.
* Buffers are ranked by a heuristic key (PREORDERINGS); :func:`search_fit` tries several
  keys in turn with doubling node limits (round robin), since one key often fails where
  another finishes at once (heavy-tailed search times).
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

from ..buffers import Buffer

INFINITY = np.int64(1) << 60

# Pre-orderings tried in turn: letters are keys, larger first (MiniMalloc's defaults):
# W = lifetime width (end - start), A = area (size x width), T = largest total of the
# unplaced sizes alive in one of its sections, Z = size.
PREORDERINGS = ("WAT", "TAW", "TWA")


class SearchGaveUp(Exception):
    """The node limit or the deadline stopped the search before an answer."""


class _Search:
    """Depth-first search over canonical packings of one ordered list of buffers.

    State is changed in place and always undone on the way back up; a packing found is
    recorded in ``solution`` as buffers are placed (the last write of each buffer is the
    one on the successful path)."""

    def __init__(self, buffers: list[Buffer], capacity: int, node_limit: int, deadline: float,
                 heuristic: str = "TWA", stop: threading.Event | None = None):
        self.capacity, self.node_limit, self.deadline = capacity, node_limit, deadline
        self.stop = stop or threading.Event()
        self.heuristic, self.nodes = heuristic, 0
        self.size = np.array([b.packed_size for b in buffers], dtype=np.int64)
        self.alignment = np.array([b.alignment for b in buffers], dtype=np.int64)
        steps = sorted({b.start for b in buffers} | {b.end for b in buffers})
        section_of = {step: index for index, step in enumerate(steps)}
        self.sections = [(section_of[b.start], section_of[b.end]) for b in buffers]
        self.section_low = np.array([low for low, _ in self.sections], dtype=np.int64)
        self.section_high = np.array([high for _, high in self.sections], dtype=np.int64)
        self.section_count = max(len(steps) - 1, 1)
        self.total = np.zeros(self.section_count, dtype=np.int64)
        # cuts[s] = unplaced buffers alive in both section s and s + 1
        self.cuts = np.zeros(self.section_count, dtype=np.int64)
        members: list[list[int]] = [[] for _ in self.total]
        for index, (low, high) in enumerate(self.sections):
            self.total[low:high] += self.size[index]
            self.cuts[low:high - 1] += 1
            for section in range(low, high):
                members[section].append(index)
        # Section -> alive buffers, flattened for np.minimum.reduceat; each section starts
        # with the sentinel index n (whose min offset is INFINITY) so none is empty.
        sentinel = len(buffers)
        self.member_index = np.array([i for m in members for i in (sentinel, *m)], dtype=np.int64)
        lengths = [len(m) + 1 for m in members]
        self.member_starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        self.overlaps = _time_overlaps(buffers)
        self.width = np.array([b.end - b.start for b in buffers], dtype=np.int64)
        self.area = self.width * self.size
        self.buffer_sections = np.array([s for low, high in self.sections
                                         for s in range(low, high)], dtype=np.int64)
        self.buffer_starts = np.concatenate(
            ([0], np.cumsum(self.section_high - self.section_low)[:-1])).astype(np.int64)
        self.index = np.arange(len(buffers))
        self.any_alignment = bool((self.alignment > 1).any())
        # min offset of each unplaced buffer, INFINITY once placed; last = sentinel (INFINITY)
        self.unplaced = np.zeros(len(buffers) + 1, dtype=np.int64)
        self.unplaced[-1] = INFINITY
        self.solution = np.zeros(len(buffers), dtype=np.int64)

    def run(self) -> bool:
        if (self.total > self.capacity).any():
            return False
        return self._solve_part(None, (0, self.section_count))

    def _solve_part(self, part: np.ndarray | None, section_range: tuple[int, int]) -> bool:
        """Search the unplaced buffers of ``part`` (None: all of them), which are
        independent of every other unplaced buffer."""
        return self._search(part, section_range, -1, -1, self._effective(part), self._rank())

    def _effective(self, part: np.ndarray | None) -> np.ndarray:
        """Min offsets of the part's unplaced buffers, INFINITY elsewhere (a view when whole)."""
        if part is None:
            return self.unplaced[:-1]
        return np.where(part, self.unplaced[:-1], INFINITY)

    def _rank(self) -> np.ndarray:
        """Pre-order rank of every buffer by the heuristic's keys, largest first; the live
        total T counts only unplaced buffers, so each independent part is re-ranked."""
        live_total = np.maximum.reduceat(self.total[self.buffer_sections], self.buffer_starts)
        keys = {"W": self.width, "A": self.area, "T": live_total, "Z": self.size}
        order = np.lexsort((self.index, *(-keys[k] for k in reversed(self.heuristic))))
        rank = np.empty_like(order)
        rank[order] = self.index
        return rank

    def _search(self, part, section_range, last_offset: int, last_rank: int,
                effective: np.ndarray, rank: np.ndarray) -> bool:
        """One node: try each candidate in increasing (min offset, rank) order."""
        self.nodes += 1
        if self.nodes > self.node_limit or (self.nodes % 64 == 0 and (
                time.perf_counter() > self.deadline or self.stop.is_set())):
            raise SearchGaveUp
        min_height = (effective + self.size).min()
        if min_height >= INFINITY:
            return True
        # Placing at offset o lifts every section's floor to o, so o + (unplaced total of
        # any section of the part) must stay within the capacity: a bound on o for all.
        low, high = section_range
        highest = self.capacity - int(self.total[low:high].max())
        mask = (effective < min_height) & (effective <= highest) & (
            (effective > last_offset) | ((effective == last_offset) & (rank > last_rank)))
        candidates = mask.nonzero()[0]
        if candidates.size > 1:
            candidates = candidates[np.lexsort((rank[candidates], effective[candidates]))]
        for index, offset in zip(candidates.tolist(), effective[candidates].tolist()):
            found, hatless = self._try(part, section_range, index, offset, rank)
            if found:
                return True
            if hatless:   # nothing can ever sit on it: other choices here fail the same way
                return False
        return False

    def _try(self, part, section_range, index: int, offset: int,
             rank: np.ndarray) -> tuple[bool, bool]:
        """Place buffer ``index`` at ``offset`` (its min offset), recurse, undo.
        Returns (found, hatless): hatless when no unplaced buffer is alive with it."""
        size = self.size[index]
        height = offset + int(size)
        if height > self.capacity:
            return False, False
        neighbours = self.overlaps[index]
        before = self.unplaced[neighbours]
        hatless = not (before < INFINITY).any()
        raised_mask = before < height
        raised = neighbours[raised_mask]
        if self.any_alignment:
            step = self.alignment[raised]
            self.unplaced[raised] = (height + step - 1) // step * step
        else:
            self.unplaced[raised] = height
        low, high = self.sections[index]
        self.total[low:high] -= size
        self.unplaced[index] = INFINITY
        self.solution[index] = offset
        found = False
        if self._consistent(offset, section_range):
            cuts = self.cuts[low:high - 1]
            cuts -= 1
            cut_points = ((cuts == 0).nonzero()[0] + (low + 1)).tolist()
            if cut_points:
                found = self._decompose(part, section_range, cut_points)
            else:
                found = self._search(part, section_range, offset, int(rank[index]),
                                     self._effective(part), rank)
            cuts += 1
        self.unplaced[index] = offset
        self.total[low:high] += size
        self.unplaced[raised] = before[raised_mask]
        return found, hatless

    def _decompose(self, part, section_range, cut_points: list[int]) -> bool:
        """No unplaced buffer crosses the cut points: solve each piece on its own."""
        bounds = [section_range[0], *cut_points, section_range[1]]
        remaining = self.unplaced[:-1] < INFINITY
        if part is not None:
            remaining &= part
        for low, high in zip(bounds, bounds[1:]):
            piece = remaining & (self.section_low < high) & (self.section_high > low)
            if piece.any() and not self._solve_part(piece, (low, high)):
                return False
        return True

    def _consistent(self, offset: int, section_range) -> bool:
        """Section inference over the part's sections: the unplaced buffers of a section
        stack above max(offset, their lowest min offset) and must end under the capacity."""
        low, high = section_range
        floor = np.minimum.reduceat(self.unplaced[self.member_index], self.member_starts)
        floor = floor[low:high]
        need = np.maximum(floor, offset) + self.total[low:high]
        return int(need[floor < INFINITY].max(initial=0)) <= self.capacity


def _time_overlaps(buffers: list[Buffer]) -> list[np.ndarray]:
    """For each buffer, the indices of the other buffers alive at some common step."""
    neighbours: list[list[int]] = [[] for _ in buffers]
    order = sorted(range(len(buffers)), key=lambda i: buffers[i].start)
    active: list[int] = []
    for i in order:
        active = [j for j in active if buffers[j].end > buffers[i].start]
        for j in active:
            neighbours[i].append(j)
            neighbours[j].append(i)
        active.append(i)
    return [np.array(sorted(n), dtype=np.int64) for n in neighbours]


def components(buffers: list[Buffer]) -> list[list[Buffer]]:
    """Split into groups with no step in common (each can be packed independently)."""
    groups: list[list[Buffer]] = []
    reach = None
    for buffer in sorted(buffers, key=lambda b: b.start):
        if reach is None or buffer.start >= reach:
            groups.append([])
            reach = buffer.end
        groups[-1].append(buffer)
        reach = max(reach, buffer.end)
    return groups


def search_fit(buffers: list[Buffer], capacity: int, deadline: float, seed: int = 0,
               stop: threading.Event | None = None) -> tuple[dict | None, bool]:
    """Offsets packing ``buffers`` under ``capacity``, or None; the flag says whether the
    answer is proven (a packing found, or the search space exhausted). Setting ``stop``
    (from another thread) ends the search early, unproven."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 8 * len(buffers) + 1000))
    offsets: dict = {}
    for group in components(buffers):
        found, proven = _search_group(group, capacity, deadline, seed, stop)
        if found is None:
            return None, proven
        offsets.update(found)
    return offsets, True


def _search_group(buffers, capacity, deadline, seed, stop):
    """Round robin over the pre-orderings with doubling node limits until one answers."""
    names = list(PREORDERINGS)
    names = names[seed % len(names):] + names[:seed % len(names)]
    node_limit = max(len(buffers), 16)
    while time.perf_counter() < deadline and not (stop and stop.is_set()):
        for name in names:
            search = _Search(buffers, capacity, node_limit, deadline, name, stop)
            try:
                if not search.run():
                    return None, True
            except SearchGaveUp:
                continue
            return {b.id: int(o) for b, o in zip(buffers, search.solution)}, True
        node_limit *= 2
    return None, False
