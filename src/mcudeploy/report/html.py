"""The self-contained HTML report of one run (``mcudeploy report RUN -o report.html``, ``--html``).

    render_html(record) -> str;  write_html_report(record, path)

One file, no network: CSS and JavaScript are inlined from ``templates/report.css`` and
``templates/report.js``, pictures are inline SVG (:mod:`.html_svg`). Safety: the template
autoescapes every value (``html.escape`` semantics: ``& < > " '``) after dropping its control
and bidi characters (the environment's ``finalize``: :func:`~.console.printable`; a sweep
name or a ``[project] version`` may hold ESC or U+202E), the SVG builders escape every name
the same way (:func:`.html_svg.escape`), and the run data embedded for scripts (``<script type="application/json">``) is
JSON whose ``<``, ``>``, ``&``, U+2028 and U+2029 are written as ``\\uXXXX`` escapes, so no
model-derived string can close the script element or start markup. The page's script makes
tables sortable (click a header) and filterable (type in the box) and, once it has run,
sets ``data-report-ready="1"`` on ``<body>`` (tests check it in a headless browser).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..runs.records import RunRecord
from ..runs.render import duration_text, local_time
from . import html_sections as sections
from .console import printable

TEMPLATES = Path(__file__).with_name("templates")
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
                   **{chr(code): f"\\u{code:04x}" for code in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                                             *range(0x2066, 0x206A))}}   # bidi controls


def script_json(data: Any) -> str:
    """JSON safe inside ``<script>``: no ``</script>``, ``<!--``, or JavaScript line terminators."""
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return "".join(_SCRIPT_ESCAPES.get(character, character) for character in text)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              finalize=_printable_value)


def _printable_value(value: Any) -> Any:
    """Every ``{{ value }}`` of the template before autoescaping: text without control and bidi
    characters; markup built here (CSS, script, SVG) passes as it is."""
    from markupsafe import Markup

    return value if isinstance(value, Markup) or not isinstance(value, str) else printable(value)


def _summary(record: RunRecord) -> list[tuple[str, str]]:
    """The run's own facts; for a deploy's report run, the deploy's (its duration is the sum of
    its stages', its stage "every stage"), not those of the report stage that wrote the page."""
    workflow = (record.payload or {}).get("workflow")
    duration, stage = duration_text(record), record.stage or "-"
    if workflow and workflow.get("stages"):
        seconds = sum(row.get("seconds") or 0.0 for row in workflow["stages"])
        ran = [row["stage"] for row in workflow["stages"] if row.get("run") is not None]
        duration = f"{seconds:.2f} s (the stages of deploy {workflow.get('deploy', '?')}, added up)"
        stage = f"deploy: {len(ran)} stage(s) ran ({', '.join(ran)}); this page is its report stage"
    return [("command line", record.command_line),
            ("status", f"{record.status} (exit code {record.exit_code})"),
            ("started", local_time(record.started_at)), ("duration", duration),
            ("model", record.model_path or "-"), ("model SHA-256", record.model_sha256 or "-"),
            ("target", record.target or "-"), ("stage", stage),
            ("tool version", f"mcudeploy {record.tool_version}"), ("git commit", record.git_commit or "-"),
            ("configuration hash", record.config_hash),
            ("tags", ", ".join(f"{k}={v}" if v else k for k, v in record.tags.items()) or "-")]


def build_sections(record: RunRecord) -> list[sections.Section]:
    """Every section the run has data for, in reading order."""
    payload = record.payload or {}
    layers = payload.get("layers", [])
    figures = sections.table_of("figures", [{"figure": name, "value": value} for name, value in record.figures.items()])
    found = [sections.workflow_section(payload.get("workflow")),
             sections.sweep_section(payload.get("sweep")),
             sections.Section("figures", "Figures", tables=[figures]) if record.figures else None,
             sections.model_section(payload.get("analysis")),
             sections.memory_section(payload.get("plan")),
             sections.latency_section(payload, layers),
             sections.error_section(payload, layers),
             sections.layer_section(layers),
             *sections.other_sections(payload)]
    config = [{"option": key, "value": value if not isinstance(value, (list, dict)) else json.dumps(value)}
              for key, value in sorted(record.config.items())]
    if config:
        found.append(sections.Section("configuration", "Configuration", tables=[sections.table_of("config", config)]))
    if record.artefacts:
        found.append(sections.Section("artefacts", "Files written", tables=[sections.table_of(
            "artefacts", [{"path": a.path, "bytes": a.size, "sha256": a.sha256} for a in record.artefacts])]))
    return [section for section in found if section is not None]


def render_html(record: RunRecord) -> str:
    """The report of ``record`` as one HTML document (module docstring)."""
    from markupsafe import Markup

    built = build_sections(record)
    for section in built:
        if section.svg is not None:
            section.svg = Markup(section.svg)   # built by html_svg, every name already escaped
    title = f"mcudeploy {record.command}: {record.model_name or 'run'}" + (f" on {record.target}" if record.target else "")
    data = {"run": record.to_dict(payload=False), "layers": [layer.get("name") for layer in
                                                              (record.payload or {}).get("layers", [])]}
    return _environment().get_template("report.html.j2").render(
        title=title, record=record, summary=_summary(record), sections=built,
        css=Markup(_asset("report.css")), script=Markup(_asset("report.js")),
        data_json=Markup(script_json(data)))


@lru_cache(maxsize=4)
def _asset(name: str) -> str:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    if "</style" in text.lower() or "</script" in text.lower():
        raise AssertionError(f"template asset {name} must not close its own element")
    return text


def write_html_report(record: RunRecord, path: str | Path) -> Path:
    """Write the report of ``record`` to ``path`` (UTF-8) and return the path."""
    from ..safe_io import write_text  # atomic; a folder or a failed write is one error line

    return write_text(Path(path), render_html(record), "--html")
