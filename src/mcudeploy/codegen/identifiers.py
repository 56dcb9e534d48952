"""Safe, stable C identifiers for IR names.

Input: arbitrary IR names (node and value names from a model file: quotes, spaces, ``/``,
``;``, ``*/``, leading digits, C keywords, clashes after cleaning). Output: identifiers that
match ``[A-Za-z_][A-Za-z0-9_]*``, are not C keywords or reserved names (``_[A-Z]``, ``__``),
are unique within one :class:`IdentifierTable`, and depend only on the names and the order
they are asked for (deterministic output).

Rule: every character outside ``[A-Za-z0-9]`` becomes ``_``, runs of ``_`` collapse, leading /
trailing ``_`` are dropped, the result is cut to :data:`MAX_LENGTH`, a prefix is added (so a
leading digit or keyword can never appear), and a clash gets ``_2``, ``_3``, ... appended.
:func:`comment_text` makes a name safe inside a ``/* */`` comment (no bidi or control
characters); :func:`string_literal` inside a ``"..."`` literal (non-ASCII as octal escapes).
"""
from __future__ import annotations

import re

MAX_LENGTH = 48
BIDI_CHARACTERS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while _Bool _Complex _Imaginary""".split())


def clean(name: str, max_length: int = MAX_LENGTH) -> str:
    """``name`` with every non-alphanumeric run as one ``_``, cut to ``max_length`` (may be empty)."""
    text = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    return text[:max_length].rstrip("_")


def comment_text(name: str) -> str:
    """``name`` safe inside a C block comment (or a Makefile ``#`` comment) and on one line:
    ``*/``, ``/*`` and trigraphs ``??x`` (which C99 still translates) broken up; control
    characters (C0, DEL, C1) become spaces; the bidirectional overrides / isolates
    U+202A-U+202E, U+2066-U+2069 (``-Werror=bidi-chars``, "Trojan Source") and the other
    direction marks are dropped; a lone surrogate (a file name that is not UTF-8) is written
    as a ``\\udcxx`` escape; no trailing backslash (a Makefile line continuation)."""
    text = name.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    text = BIDI_CHARACTERS.sub("", re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text))
    text = text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text.rstrip("\\")


def string_literal(name: str) -> str:
    """``name`` as a C string literal (quotes, backslashes, non-ASCII escaped as octal)."""
    out = []
    for byte in name.encode("utf-8", errors="backslashreplace"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 32 <= byte < 127 and char != "?":   # '?' escaped: no trigraphs
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


class IdentifierTable:
    """Unique identifiers with one prefix (``node_``, ``tensor_``, ...) for IR names."""

    def __init__(self, prefix: str, max_length: int = MAX_LENGTH) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", prefix) or "__" in prefix:
            raise ValueError(f"identifier prefix {prefix!r} must look like 'word_' or 'word'")
        self.prefix = prefix
        self.max_length = max_length
        self._by_name: dict[str, str] = {}
        self._taken: set[str] = set()

    def __getitem__(self, name: str) -> str:
        """The identifier of ``name`` (assigned on first request)."""
        if name not in self._by_name:
            base = self.prefix + (clean(name, self.max_length) or "unnamed")
            candidate, counter = base, 1
            while candidate in self._taken or candidate in C_KEYWORDS:
                counter += 1
                candidate = f"{base}_{counter}"
            self._taken.add(candidate)
            self._by_name[name] = candidate
        return self._by_name[name]
