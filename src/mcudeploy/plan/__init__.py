"""Static memory planning: place buffers with known lifetimes in one arena.

Plain records in, plain records out: :class:`Buffer` (size, [start, end), alignment) ->
:class:`Plan` (offsets, arena size, lower bound, proof). Allocators live in
:mod:`.allocators` (linear, greedy, search, exact); :func:`plan_buffers` is the portfolio
that combines them; :mod:`.fit` turns a plan into a fits / does-not-fit verdict;
:mod:`.minimalloc_csv` reads and writes MiniMalloc's CSV format.
"""
from .allocators import ALLOCATORS
from .bounds import live_set_bound
from .buffers import Buffer, Plan
from .fit import describe_fit, fit_verdict, require_fit
from .portfolio import allocate, plan_buffers
from .validate import InvalidPlanError, validate_plan

__all__ = ["ALLOCATORS", "Buffer", "InvalidPlanError", "Plan", "allocate", "describe_fit",
           "fit_verdict", "live_set_bound", "plan_buffers", "require_fit", "validate_plan"]
