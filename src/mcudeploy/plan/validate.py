"""Validator of plans: the invariants every allocator's output must satisfy.

A plan for buffers B is valid when
  * every buffer has an offset, offset >= 0 and offset % alignment == 0;
  * no two buffers a, b overlap both in time ([start, end) intersect) and in space
    ([offset, offset + packed size) intersect);
  * the recorded arena size equals max(offset + packed size);
  * when the plan claims to fit, arena size <= capacity.
Checked by a sweep over start steps: O(n log n + pairs alive together).
"""
from __future__ import annotations

from .buffers import Buffer, Plan, arena_size_of


class InvalidPlanError(AssertionError):
    """An allocator produced an invalid plan: a bug in mcudeploy, not a user mistake."""


def plan_problems(buffers: list[Buffer], plan: Plan) -> list[str]:
    """Every broken invariant of ``plan`` as one sentence each (empty when valid)."""
    problems = []
    for buffer in buffers:
        offset = plan.offsets.get(buffer.id)
        if offset is None:
            problems.append(f"buffer {buffer.id} has no offset")
        elif offset < 0 or offset % buffer.alignment:
            problems.append(f"buffer {buffer.id} offset {offset} is negative or not a multiple "
                            f"of its alignment {buffer.alignment}")
    if problems:
        return problems
    problems += _overlaps(buffers, plan.offsets)
    size = arena_size_of(buffers, plan.offsets)
    if size != plan.arena_size:
        problems.append(f"recorded arena size {plan.arena_size} differs from the offsets' {size}")
    if plan.capacity is not None and plan.fits and size > plan.capacity:
        problems.append(f"plan claims to fit but needs {size} > capacity {plan.capacity}")
    return problems


def validate_plan(buffers: list[Buffer], plan: Plan) -> None:
    """Raise :class:`InvalidPlanError` listing every broken invariant of ``plan``."""
    problems = plan_problems(buffers, plan)
    if problems:
        raise InvalidPlanError(f"invalid plan from {plan.allocator}: " + "; ".join(problems[:10]))


def _overlaps(buffers: list[Buffer], offsets: dict) -> list[str]:
    problems = []
    active: list[Buffer] = []
    for buffer in sorted(buffers, key=lambda b: b.start):
        active = [a for a in active if a.end > buffer.start]
        low, high = offsets[buffer.id], offsets[buffer.id] + buffer.packed_size
        for other in active:
            other_low = offsets[other.id]
            if low < other_low + other.packed_size and other_low < high:
                problems.append(f"buffers {other.id} and {buffer.id} overlap in time and space")
        if buffer.end > buffer.start:
            active.append(buffer)
    return problems
