"""Run references as the command line gives them: ``12``, ``last`` / ``latest``, ``-N``.

    parse_reference("12") -> ("id", 12);  parse_reference("-2") -> ("back", 2)

One parser for every command that takes a run (``runs show|diff``, ``report``, ``doctor``,
through :meth:`mcudeploy.runs.store.RunStore.resolve`), so they agree on what is a run id:
ASCII digits only (``str.isdigit`` also accepts ``①`` and other scripts' digits, which
``int`` then refuses), at most :data:`MAX_RUN_ID` (SQLite's integers are 64-bit signed; a
larger number overflows the query). Anything else is one
:class:`~mcudeploy.errors.UsageError` line saying what a run id is.
"""
from __future__ import annotations

import re

from ..errors import UsageError

MAX_RUN_ID = 2 ** 63 - 1          # SQLite INTEGER PRIMARY KEY
_NUMBER = re.compile(r"[0-9]{1,19}")
HELP = "give a number from 'mcudeploy runs list', 'last', or -N for the N-th most recent run"


def parse_reference(reference: str | int) -> tuple[str, int]:
    """``("id", n)`` for run ``n``, ``("back", n)`` for the n-th most recent (module docstring)."""
    text = str(reference).strip().lower()
    if text in ("last", "latest"):
        return "back", 1
    back = text.startswith("-")
    digits = text[1:] if back else text
    if _NUMBER.fullmatch(digits) is None or int(digits) > MAX_RUN_ID or (back and int(digits) == 0):
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise UsageError(f"{shown!r} is not a run id (run ids are 1 to {MAX_RUN_ID}); {HELP}")
    return ("back" if back else "id"), int(digits)


def clamp_limit(limit: int) -> int:
    """A ``--limit`` as SQLite takes it: negative is 0, beyond 64 bits is every run."""
    return min(max(int(limit), 0), MAX_RUN_ID)
