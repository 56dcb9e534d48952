"""Plain records of static memory planning: the buffers to place and the plan that places them.

Input: :class:`Buffer` ``(id, size, start, end, alignment)``, alive over the half-open step
interval ``[start, end)`` (MiniMalloc's ``lower`` / ``upper``) and needing ``size`` bytes.
Output: :class:`Plan`, one offset per buffer id plus the figures that judge it:

    arena size      = max over buffers of (offset + packed size)
    overhead %      = 100 * (arena size - lower bound) / lower bound
    packed size     = size rounded up to the alignment: ceil(size / alignment) * alignment

Two buffers conflict when they overlap in time (``a.start < b.end and b.start < a.end``)
and in space (``[offset, offset + packed size)`` intersect). A plan is valid when no two
buffers conflict and every offset is a multiple of its buffer's alignment
(checked by :func:`mcudeploy.plan.validate.validate_plan`).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Buffer:
    """One buffer: ``size`` bytes alive over steps ``[start, end)``; offset a multiple of ``alignment``."""

    id: int | str
    size: int
    start: int
    end: int
    alignment: int = 1

    @property
    def packed_size(self) -> int:
        """The size rounded up to a multiple of the alignment (the space the allocators reserve)."""
        return -(-self.size // self.alignment) * self.alignment

    def overlaps_in_time(self, other: "Buffer") -> bool:
        return self.start < other.end and other.start < self.end


# How far an allocator got in proving its answer (exact solvers only prove anything).
PROOF_OPTIMAL = "optimal"          # the arena size is the smallest possible
PROOF_FEASIBLE = "feasible"        # a packing under the capacity was found (no claim of optimality)
PROOF_INFEASIBLE = "infeasible"    # proven: no packing fits the capacity
PROOF_NONE = "none"                # heuristic result, nothing proven


@dataclass
class Plan:
    """The result of an allocator: offsets by buffer id and the figures that judge them."""

    offsets: dict[int | str, int]
    arena_size: int
    lower_bound: int
    allocator: str
    seconds: float = 0.0
    capacity: int | None = None
    proof: str = PROOF_NONE
    proven_lower_bound: int | None = None   # a bound proven by an exact solver, if better
    peak_steps: list[int] = field(default_factory=list)
    peak_buffers: list[int | str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """True when the plan is within the capacity it was given (always True without one)."""
        return self.capacity is None or self.arena_size <= self.capacity

    @property
    def overhead_percent(self) -> float:
        """100 * (arena size - lower bound) / lower bound (0 for an empty plan)."""
        if self.lower_bound == 0:
            return 0.0
        return 100.0 * (self.arena_size - self.lower_bound) / self.lower_bound

    @property
    def best_lower_bound(self) -> int:
        return max(self.lower_bound, self.proven_lower_bound or 0)


def arena_size_of(buffers: list[Buffer], offsets: dict[int | str, int]) -> int:
    """max over buffers of offset + packed size (0 when there are no buffers)."""
    return max((offsets[b.id] + b.packed_size for b in buffers), default=0)


def align_up(value: int, alignment: int) -> int:
    """The smallest multiple of ``alignment`` that is >= ``value``."""
    return -(-value // alignment) * alignment
