"""The run being recorded right now, for code that adds figures without being handed the run.

    with active_run(run):        # the CLI hook (mcudeploy.cli.recording) around a command
        ...
        current_run().figure("arena_bytes", 33312)   # anywhere below; a no-op outside a run

:func:`current_run` returns :data:`~.live.NULL_RUN` (which ignores everything) when no run
is active, so callers never check. One process records one command at a time.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

_current: Any = None


def current_run() -> Any:
    """The active :class:`~.live.Run`, or :data:`~.live.NULL_RUN` outside one."""
    if _current is not None:
        return _current
    from .live import NULL_RUN
    return NULL_RUN


@contextmanager
def active_run(run) -> Iterator[Any]:
    """Make ``run`` the :func:`current_run` for the block."""
    global _current
    previous, _current = _current, run
    try:
        yield run
    finally:
        _current = previous
