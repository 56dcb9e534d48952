"""Static memory allocators behind one interface (see :mod:`.base`), registered by name:
``linear``, ``greedy``, ``search`` (branch and bound) and ``exact`` (CP-SAT)."""
from . import exact, greedy, linear, search  # noqa: F401  (register the allocators)
from .base import ALLOCATORS, Allocator, allocator, make_plan

__all__ = ["ALLOCATORS", "Allocator", "allocator", "make_plan"]
