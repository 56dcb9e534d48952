"""Does a plan fit its capacity, and if not, why: user-facing verdicts from a :class:`Plan`.

Verdicts, checked in this order:
  * FITS                    arena size <= capacity (or no capacity given);
  * BOUND_EXCEEDS_CAPACITY  live-set bound > capacity: the buffers alive together at one
                            step need more than the capacity, so no packing can help
                            (shortfall = bound - capacity);
  * FRAGMENTATION           bound <= capacity < best arena found: the bytes would fit, but
                            no packing found puts them side by side (shortfall = arena - capacity);
                            proven when an exact search exhausted every packing.
"""
from __future__ import annotations

import re

from ..errors import DoesNotFitError, UsageError
from .buffers import PROOF_INFEASIBLE, Plan

FITS = "fits"
BOUND_EXCEEDS_CAPACITY = "bound-exceeds-capacity"
FRAGMENTATION = "fragmentation"


_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "KIB": 1024,
          "M": 1024 ** 2, "MB": 1024 ** 2, "MIB": 1024 ** 2}


def byte_size(text: str, option: str) -> int:
    """``393216``, ``384K``, ``1M`` (also KiB / MiB; K and M are binary: 1024, 1024^2) ->
    bytes; a :class:`UsageError` naming the command-line ``option`` otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).upper() if match else None
    if match is None or unit not in _UNITS:
        raise UsageError(f"{option} {text!r} is not a size: write bytes (393216) or use "
                         "K / M suffixes (384K, 1M)")
    return int(match.group(1)) * _UNITS[unit]


def byte_text(count: int) -> str:
    """``1048576 bytes (1024.0 KiB)``."""
    return f"{count} bytes ({count / 1024:.1f} KiB)"


def fit_verdict(plan: Plan) -> str:
    """FITS, BOUND_EXCEEDS_CAPACITY or FRAGMENTATION (see the module docstring)."""
    if plan.fits:
        return FITS
    assert plan.capacity is not None  # a plan without a capacity always fits
    if plan.lower_bound > plan.capacity:
        return BOUND_EXCEEDS_CAPACITY
    return FRAGMENTATION


def describe_fit(plan: Plan, sizes: dict | None = None) -> str:
    """One paragraph saying whether the plan fits, by how much, and what to do.
    ``sizes`` (id -> bytes) lets the message name the largest buffers at the peak."""
    verdict = fit_verdict(plan)
    if verdict == FITS:
        if plan.capacity is None:
            return f"arena {byte_text(plan.arena_size)} (no capacity given)"
        return (f"fits: arena {byte_text(plan.arena_size)} <= capacity "
                f"{byte_text(plan.capacity)}, {byte_text(plan.capacity - plan.arena_size)} spare")
    assert plan.capacity is not None  # a plan without a capacity always fits
    if verdict == BOUND_EXCEEDS_CAPACITY:
        return _bound_message(plan, sizes or {})
    proof = ("an exhaustive search proved that no packing fits"
             if plan.proof == PROOF_INFEASIBLE else
             "no packing under the capacity was found in the time allowed (a longer "
             "--time-limit may find one)")
    return (f"does not fit (fragmentation): the buffers alive together need at most "
            f"{byte_text(plan.lower_bound)}, which is within the capacity "
            f"{byte_text(plan.capacity)}, but the best packing found needs "
            f"{byte_text(plan.arena_size)}, {byte_text(plan.arena_size - plan.capacity)} over; "
            f"{proof}. Raise the capacity by that much, or shorten buffer lifetimes.")


def _bound_message(plan: Plan, sizes: dict) -> str:
    assert plan.capacity is not None  # only a plan that does not fit is described here
    steps = ", ".join(str(step) for step in plan.peak_steps[:5])
    largest = ", ".join(f"{b} ({sizes[b]} bytes)" if b in sizes else str(b)
                        for b in plan.peak_buffers[:5])
    more = len(plan.peak_buffers) - 5
    largest += f" and {more} more" if more > 0 else ""
    return (f"does not fit: at step {steps} the {len(plan.peak_buffers)} buffers alive "
            f"together need {byte_text(plan.lower_bound)}, "
            f"{byte_text(plan.lower_bound - plan.capacity)} more than the capacity "
            f"{byte_text(plan.capacity)}; no packing can help. Largest buffers alive there: "
            f"{largest}. Raise the capacity or shrink / shorten those buffers.")


def require_fit(plan: Plan, sizes: dict | None = None) -> None:
    """Raise :class:`DoesNotFitError` with :func:`describe_fit`'s message unless the plan fits."""
    if not plan.fits:
        raise DoesNotFitError(describe_fit(plan, sizes))
