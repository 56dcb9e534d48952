"""Notes: facts a command keeps with its recorded run but prints only with ``-v``.

    note(log, "%s: input %r has a dynamic batch dimension; fixing it to 1", path, name)

A note is an INFO log record marked :data:`RECORDED`. The console shows it at ``-v`` (INFO),
like any progress line; the run recorders (:class:`mcudeploy.runs.capture.RunLogCapture`, in
the CLI and in every sweep cell) keep it with the run's warnings, so ``runs show`` and the
report still have it. For what every export does and every user knows (a dynamic batch fixed
to 1 on a microcontroller), a warning on every command was noise (issue 27).
"""
from __future__ import annotations

import logging

RECORDED = "mcudeploy_recorded"


def note(logger: logging.Logger, message: str, *args: object) -> None:
    """Log ``message % args`` at INFO, marked to be recorded with the run."""
    logger.info(message, *args, extra={RECORDED: True})


def is_recorded(record: logging.LogRecord) -> bool:
    """Whether a run recorder keeps ``record``: every warning and error, and the notes."""
    return record.levelno >= logging.WARNING or bool(getattr(record, RECORDED, False))
