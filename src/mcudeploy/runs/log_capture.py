"""The log records a run keeps: every ``mcudeploy.*`` warning and error, and the notes
(:mod:`mcudeploy.notes`: INFO records marked to be recorded), as the run's warnings.

    with capturing(run):
        ...   # the command, or a sweep cell

Used by the CLI's recording hook and by every sweep cell, so both keep the same messages. While
capturing, the ``mcudeploy`` logger passes INFO records on (a note is one); what the console
prints is its handler's level (``-v``), not the logger's. The run store's own messages
(``mcudeploy.runs``) are not recorded in the run they are about.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from ..notes import is_recorded

if TYPE_CHECKING:
    from .live import Run


class RunLogCapture(logging.Handler):
    """Records each kept ``mcudeploy.*`` record (module docstring) as a warning of ``run``."""

    def __init__(self, run: "Run"):
        super().__init__(level=logging.NOTSET)
        self.run = run

    def emit(self, record: logging.LogRecord) -> None:
        if is_recorded(record) and not record.name.startswith("mcudeploy.runs"):
            self.run.warn(record.getMessage())


@contextmanager
def capturing(run: "Run") -> Iterator[None]:
    """The kept records of the block go into ``run`` (module docstring)."""
    logger, handler = logging.getLogger("mcudeploy"), RunLogCapture(run)
    previous = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
