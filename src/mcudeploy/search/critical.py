"""Critical points by bisection instead of fixed steps: the exact SRAM limit below which a
configuration stops fitting, the largest reserve it leaves, the largest input it takes.

    boundary(values, run) -> Boundary

``values`` is ordered from the failing side to the passing side (SRAM limits ascending;
input sizes descending); ``run(value)`` is one trial through the pipeline. Bisection keeps
the invariant *``values[low]`` fails, ``values[high]`` passes* (both ends are run first:
if the last fails there is no boundary, if the first passes it is the boundary) and halves
``high - low`` until they are neighbours, so it needs ``ceil(log2(len(values))) + 2`` trials
where 32 KB steps over 512 KB need 16 and stop 32 KB from the answer. The result is exact on
the grid: ``values[high]`` PASSes and ``values[high - 1]`` FAILs, both run.

SRAM limits are every byte count in ``[0, high]`` (a ``range``, never materialised); for a
deployment the fit is monotone in the limit (a larger cap only adds room), so the boundary
is the smallest limit that fits. Where it is not monotone (a split arena's bank choice), the
result still satisfies the two-trial property above.

``stop()`` (the search's time budget) is asked before each halving: when it says stop, the
result is the bracket reached so far (both ends run), ``exact = False``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass
class Boundary:
    passing: Any = None          # the value on the passing side (None: nothing passes)
    failing: Any = None          # its neighbour on the failing side (None: the first value passes)
    passing_trial: Any = None
    failing_trial: Any = None
    trials: list = field(default_factory=list)
    exact: bool = True           # False: stopped (out of time) before the two sides were neighbours

    @property
    def found(self) -> bool:
        return self.passing is not None


def boundary(values: Sequence, run: Callable[[Any], Any],
             ok: Callable[[Any], bool] = lambda trial: trial.passed, high_first: bool = True,
             stop: Callable[[], bool] | None = None) -> Boundary:
    """The boundary of the module docstring; ``run`` returns a trial, ``ok`` says whether it
    is on the passing side (default: it PASSes; a fix may ask only that its reasons are gone).
    ``high_first=False`` runs ``values[0]`` first: when it is already on the passing side
    the other end is not run."""
    result = Boundary()
    if not len(values):
        return result
    ends = {}
    for index in ((len(values) - 1, 0) if high_first else (0, len(values) - 1)):
        trial = run(values[index])
        result.trials.append(trial)
        ends[index] = trial
        if index == 0 and ok(trial):
            result.passing, result.passing_trial = values[0], trial
            return result
        if index == len(values) - 1 and not ok(trial):
            result.failing, result.failing_trial = values[-1], trial
            return result
    low, high = 0, len(values) - 1
    low_trial, high_trial = ends[0], ends[len(values) - 1]
    while high - low > 1:
        if stop is not None and stop():
            result.exact = False
            break
        middle = (low + high) // 2
        trial = run(values[middle])
        result.trials.append(trial)
        if ok(trial):
            high, high_trial = middle, trial
        else:
            low, low_trial = middle, trial
    result.passing, result.passing_trial = values[high], high_trial
    result.failing, result.failing_trial = values[low], low_trial
    return result
