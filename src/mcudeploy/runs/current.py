"""The run being recorded right now, for code that adds figures without being handed the run.

    with active_run(run):        # the CLI hook (mcudeploy.cli.recording) around a command
        ...
        current_run().figure("arena_bytes", 33312)   # anywhere below; a no-op outside a run

:func:`current_run` returns :data:`NULL_RUN` (which ignores everything) when no run is
active, so callers never check; it lives here, not in :mod:`.live`, so that code running
outside a recorded command imports nothing more. One process records one command at a time.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

_current: Any = None


class _NullRun:
    """The run outside any recorded command: every method does nothing."""

    active = False
    id = None
    record = None

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: None


NULL_RUN: Any = _NullRun()


def current_run() -> Any:
    """The active :class:`~.live.Run`, or :data:`NULL_RUN` outside one."""
    return _current if _current is not None else NULL_RUN


@contextmanager
def active_run(run) -> Iterator[Any]:
    """Make ``run`` the :func:`current_run` for the block."""
    global _current
    previous, _current = _current, run
    try:
        yield run
    finally:
        _current = previous
