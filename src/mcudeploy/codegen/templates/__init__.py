"""Jinja2 templates of the generated files and :func:`render` (strict: an undefined name is
an error, output ends with exactly one newline, no trailing spaces)."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("mcudeploy.codegen", "templates"),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True, autoescape=False)


def render(name: str, context: dict[str, Any]) -> str:
    """The text of template ``name`` with ``context``."""
    text = _environment().get_template(name).render(**context)
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(lines).rstrip("\n") + "\n"
