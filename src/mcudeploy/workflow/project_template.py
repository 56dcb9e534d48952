"""The commented project file ``mcudeploy init`` writes.

    project_text(model, values, model_summary) -> str

Input: the model path as written in the file, the values ``init`` was given
(``{(section, key): value}``, sections as in the file: ``"deployment.target"``), and lines
describing the model's inputs and outputs. Output: TOML text with every key of
:mod:`.project_keys` and every deployment option of :mod:`mcudeploy.options`, each under a
comment with its help and accepted values; the keys ``init`` was given are set, the others
are commented out at their default (so the file documents itself and parses as is).

TOML allows no control character but tab in a string or a comment: in strings every one
(newline, CR, ESC, DEL, ...) is written as a ``\\uXXXX`` escape, so the value reads back as
it was; in comments (model names in the header) as the text ``\\xNN``.
"""
from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from ..options import SECTIONS as OPTION_SECTIONS
from ..options import DeploymentOptions
from .project_keys import DEPLOYMENT_SECTION, SECTION_HELP, SECTIONS

HEADER = """mcudeploy project file{origin}.
`mcudeploy deploy` runs the staged deployment on it: analyze -> lint -> feasibility (the float
model planned at minimal options) -> quantize -> validate -> search (the deployment options
raised step by step, the last step that fits kept as the fallback) -> generate -> verify (the
generated C code, bit-exact on the host and the target core's QEMU board) -> report (HTML).
Each stage is recorded as one run (`mcudeploy runs list`, `runs diff A B`); `mcudeploy deploy
--from STAGE` resumes from the artefacts of the stages before it. Paths are relative to this
file; every key but [project] model is optional (commented keys show their default)."""
DEPLOYMENT_HELP = """The deployment options: the sections of a --config file (src/mcudeploy/options.py) under
[deployment.*]. `mcudeploy deploy` writes the ones it deployed with to <output>/deployment.toml
(and the fallback to <output>/fallback.toml): `mcudeploy plan MODEL --config <output>/deployment.toml`
reads them."""
# what a commented-out optional option shows when its default is "not set"
OPTION_EXAMPLES = {"target": "stm32h743", "memory_pools": "board.mpool", "sram_limit": "384K",
                   "activation_region": "AXI_SRAM", "tiling_limit": "256K", "split_limit": "1M",
                   "weights_ram_limit": "64K",
                   "external_region": "hyperRAM", "force_cpu": ["conv7"], "reserve_regions": ["DTCM"],
                   "split_points": ["conv7"], "tiling_regions": [{"start": "conv1", "end": "conv5", "tiles": 4}]}


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")    # TOML's disallowed characters (tab is allowed)


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: backslash, quote and control characters escaped."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + '"'


def _key(key: str) -> str:
    """A TOML key: bare when it can be (letters, digits, ``_``, ``-``), else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key)


def toml_value(value: Any) -> str:
    """``value`` as TOML (text, booleans, numbers, lists, inline tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(key)} = {toml_value(item)}" for key, item in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if hasattr(value, "to_table"):
        return toml_value(value.to_table())
    return repr(value)


def _shown(match: re.Match) -> str:
    return "\\x%02x" % ord(match.group())


def _comment(lines: str) -> list[str]:
    return [f"# {_CONTROL.sub(_shown, line)}".rstrip() for line in lines.splitlines()]


def _entry(key: str, help_text: str, choices: tuple[str, ...], value: Any, given: bool) -> list[str]:
    accepted = " | ".join(choices)
    comment = f"{help_text} ({accepted})" if help_text and choices else help_text or accepted
    lines = [f"# {comment}"] if comment else []
    line = f"{key} = {toml_value(value)}"
    return lines + [line if given else f"# {line}"]


def _project_sections(values: dict[tuple[str, str], Any], examples: dict[tuple[str, str], Any]) -> list[str]:
    lines: list[str] = []
    for section, specs in SECTIONS.items():
        lines += ["", f"# ---- {SECTION_HELP[section]}", f"[{section}]"]
        for key, spec in specs.items():
            given = (section, key) in values
            shown = spec.default if spec.default is not None else examples.get((section, key), spec.example)
            value = values.get((section, key), shown)
            if value is None:
                value = ""
            lines += _entry(key, spec.help, spec.choices, value, given or spec.required)
    return lines


def _deployment_sections(values: dict[tuple[str, str], Any]) -> list[str]:
    defaults = DeploymentOptions()
    lines = ["", "# ---- deployment options", *_comment(DEPLOYMENT_HELP)]
    for section, specs in OPTION_SECTIONS.items():
        name = f"{DEPLOYMENT_SECTION}.{section}"
        lines += ["", f"[{name}]"]
        for key, spec in specs.items():
            given = (name, key) in values
            value = values.get((name, key), getattr(defaults, spec.field))
            if value is None or (value == () and spec.field in OPTION_EXAMPLES):
                value = OPTION_EXAMPLES.get(spec.field, "")
            lines += _entry(key, spec.help, spec.choices, list(value) if isinstance(value, tuple) else value, given)
    return lines


def project_text(model: str, values: dict[tuple[str, str], Any], model_summary: list[str], origin: str = "",
                 examples: dict[tuple[str, str], Any] | None = None) -> str:
    """The project file (module docstring); ``values`` must not hold ``("project", "model")``;
    ``examples`` are shown (commented) for keys without a value instead of the generic ones, e.g.
    the model's real input shapes."""
    lines = _comment(HEADER.format(origin=origin))
    if model_summary:
        lines += ["#", *_comment("\n".join(model_summary))]
    examples = {("project", "name"): PurePath(model).stem, ("project", "version"): "1.0", **(examples or {})}
    body = _project_sections({("project", "model"): model, **values}, examples) + _deployment_sections(values)
    return "\n".join(lines + body) + "\n"
