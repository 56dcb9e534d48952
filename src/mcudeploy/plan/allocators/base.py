"""The allocator interface, its registry, and the helper that turns offsets into a :class:`Plan`.

An allocator is a function

    allocate(buffers, capacity=None, time_limit=60.0, seed=0) -> Plan

that returns offsets for every buffer. With a capacity it may stop as soon as a plan fits;
it never hides a plan above the capacity (the :class:`Plan` carries the capacity and
``Plan.fits`` says whether it holds). Allocators register with :func:`allocator`.
"""
from __future__ import annotations

import time
from typing import Callable, Protocol, TypeVar

from ..bounds import live_set_bound
from ..buffers import PROOF_NONE, Buffer, Plan, arena_size_of


class Allocator(Protocol):
    def __call__(self, buffers: list[Buffer], capacity: int | None = None,
                 time_limit: float = 60.0, seed: int = 0) -> Plan: ...


ALLOCATORS: dict[str, Allocator] = {}


AllocatorT = TypeVar("AllocatorT", bound=Allocator)


def allocator(name: str) -> Callable[[AllocatorT], AllocatorT]:
    """Decorator registering an allocator under ``name``."""
    def register(function: AllocatorT) -> AllocatorT:
        ALLOCATORS[name] = function
        return function
    return register


def make_plan(buffers: list[Buffer], offsets: dict, allocator_name: str, started: float,
              capacity: int | None, proof: str = PROOF_NONE,
              proven_lower_bound: int | None = None) -> Plan:
    """A :class:`Plan` from ``offsets``, with the arena size, the live-set bound and its peak."""
    bound = live_set_bound(buffers)
    return Plan(offsets=dict(offsets), arena_size=arena_size_of(buffers, offsets),
                lower_bound=bound.bytes, allocator=allocator_name,
                seconds=time.perf_counter() - started, capacity=capacity, proof=proof,
                proven_lower_bound=proven_lower_bound,
                peak_steps=[first for first, _ in bound.peak_intervals],
                peak_buffers=[b.id for b in bound.peak_buffers])
