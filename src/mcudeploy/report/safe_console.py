"""The rich console :func:`~.console.make_console` returns: markup and emoji off by default,
every rendered string cleaned by :func:`~.console.printable` (see :mod:`.console`)."""
from __future__ import annotations

from typing import Any

from rich.console import Console

from .console import printable


class SafeConsole(Console):
    """A rich console with markup and emoji off by default whose rendered strings pass
    through :func:`printable`."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("markup", False)
        options.setdefault("emoji", False)
        super().__init__(**options)

    def render_str(self, text: str, **options: Any):  # every str -> Text conversion
        return super().render_str(printable(text), **options)
