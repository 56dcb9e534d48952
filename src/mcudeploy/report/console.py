"""The one place terminal output is configured, and made safe for names from model files.

On a terminal, rich uses the terminal's width. Piped output (a file, a CI log, ``| less``)
gets wide rows instead of rich's 80-column default, so tables stay one row per line and
names are not folded mid-word.

Names printed on the console come from files the user did not necessarily write (node,
tensor and region names, descriptions). :func:`make_console` therefore returns a console
that

* does not interpret rich markup or emoji codes in strings by default: a node named
  ``[bold]`` or ``[/]`` prints as written (and cannot raise ``MarkupError``). Code that
  wants styling passes ``markup=True`` with :func:`rich.markup.escape` d names, or builds
  :class:`rich.text.Text` with styles;
* removes, from every string it renders (``print`` arguments, table cells, titles), the
  characters that act on the terminal instead of showing: C0 / C1 control characters
  (ESC starts the escape sequences that move the cursor, retitle the window or rewrite
  earlier output), DEL, and the bidirectional overrides / isolates U+202A-U+202E,
  U+2066-U+2069 (which reorder what is shown). Newlines and tabs stay.

:func:`printable` is that cleaning as a function, for text that does not go through rich
(error messages, ``print``, log records: see :class:`PrintableFormatter`); :func:`csv_cell`
makes a CSV cell safe for a spreadsheet.
"""
from __future__ import annotations

import logging
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 220
# C0 controls except tab and newline, DEL, C1 controls, bidi embeddings / overrides /
# isolates, and the other invisible direction marks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: Any, *, one_line: bool = False) -> str:
    """``str(text)`` without terminal control and bidi characters (see the module
    docstring); ``one_line`` also turns newlines and tabs into spaces. Lone surrogates
    (from a name that was not valid UTF-8) are shown as ``\\udcxx`` escapes."""
    text = str(text)
    if one_line:
        text = " ".join(part.strip() for part in text.splitlines() if part.strip())
        text = text.replace("\t", " ")
    text = _UNSAFE.sub("", text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text


FORMULA_PREFIXES = ("=", "+", "-", "@")


def csv_cell(value: Any) -> Any:
    """A CSV cell safe to open in a spreadsheet: text without control characters, and text
    starting with ``= + - @`` (which Excel / LibreOffice run as a formula) gets a leading
    apostrophe. Numbers pass unchanged (a negative number is not a formula)."""
    if not isinstance(value, str):
        return value
    text = printable(value, one_line=True)
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def make_console(**options: Any) -> Console:
    """The console every command prints with (``options`` go to :class:`rich.console.Console`):
    a :class:`~.safe_console.SafeConsole` (rich is imported here, on first use: commands
    whose output needs no rich, such as a piped ``plan``, do not pay for its import)."""
    from .safe_console import SafeConsole

    options.setdefault("width", None if sys.stdout.isatty() else PIPED_WIDTH)
    return SafeConsole(**options)


def __getattr__(name: str) -> Any:
    if name == "SafeConsole":   # it lives in .safe_console (rich is imported with it)
        from .safe_console import SafeConsole
        return SafeConsole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PrintableFormatter(logging.Formatter):
    """A log formatter whose records are :func:`printable` (names in log messages come
    from model files too)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
