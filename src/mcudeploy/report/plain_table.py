"""Plain text of simple tables and lines, exactly as :func:`~.console.make_console` prints
them when stdout is not a terminal, without importing rich (its import and its layout cost
more than a ``mcudeploy plan`` of a small model).

    plain_text(tables, lines, width) -> str | None

A :class:`TableText` is a title, columns ``(header, justify)`` and rows of strings. Rich's
default table (box ``HEAVY_HEAD``, one space of padding, title centred over the table):

    ┏━━━━━━┳━━━━┓      column width = max(len(header), len(cells))
    ┃ item ┃ no ┃      left pad of the title = (table width - len(title)) // 2
    ┡━━━━━━╇━━━━┩
    │ a    │  1 │
    └──────┴────┘

Only what this layout renders the same as rich is done here: printable ASCII, no leading or
trailing blanks in a line, every table with rows, nothing wider than ``width`` (rich would
wrap it), and no environment variable that makes rich style piped output. Anything else
returns None and the caller prints with rich.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

STYLING_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@dataclass
class TableText:
    """A table as text: title, columns ``(header, justify)``, rows."""
    title: str
    columns: list[tuple[str, str]]            # (header, "left" | "right")
    rows: list[list[str]] = field(default_factory=list)


def _simple(text: str) -> bool:
    return text.isascii() and text.isprintable() and text == text.strip()


def _cell(text: str, width: int, justify: str) -> str:
    return text.rjust(width) if justify == "right" else text.ljust(width)


def table_lines(table: TableText, width: int) -> list[str] | None:
    """The lines of ``table`` as rich prints it, or None (module docstring)."""
    cells = [header for header, _ in table.columns] + [cell for row in table.rows for cell in row]
    if not table.rows or not all(_simple(text) for text in [table.title, *cells]) or not table.title:
        return None
    if any(len(row) != len(table.columns) for row in table.rows):
        return None
    widths = [max(len(header), *(len(row[index]) for row in table.rows))
              for index, (header, _) in enumerate(table.columns)]
    total = sum(widths) + 3 * len(widths) + 1
    if total > width or len(table.title) > total:
        return None

    def rule(left: str, line: str, middle: str, right: str) -> str:
        return left + middle.join(line * (w + 2) for w in widths) + right

    def row(values: list[str], bar: str) -> str:
        return bar + bar.join(f" {_cell(value, w, justify)} " for value, w, (_, justify)
                              in zip(values, widths, table.columns)) + bar

    pad = (total - len(table.title)) // 2
    return [" " * pad + table.title + " " * (total - len(table.title) - pad),
            rule("┏", "━", "┳", "┓"), row([header for header, _ in table.columns], "┃"),
            rule("┡", "━", "╇", "┩"), *(row(values, "│") for values in table.rows),
            rule("└", "─", "┴", "┘")]


def plain_text(tables: list[TableText], lines: list[str], width: int) -> str | None:
    """The tables then the lines, one print each, or None when rich must print them."""
    if any(os.environ.get(name) for name in STYLING_VARIABLES):
        return None
    if not all(_simple(line) and 0 < len(line) <= width for line in lines):
        return None
    out: list[str] = []
    for table in tables:
        rendered = table_lines(table, width)
        if rendered is None:
            return None
        out += rendered
    return "\n".join(out + lines) + "\n"
