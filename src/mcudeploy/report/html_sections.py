"""The sections of a run's HTML report, as plain data for the template.

Input: a :class:`~mcudeploy.runs.RunRecord` with its payload (schema in
:mod:`mcudeploy.runs.payload`). Output: a list of :class:`Section` - title, paragraphs,
:class:`HtmlTable` s and inline SVG pictures. A section or a table column appears only when
the run has its data: the per-layer table shows the columns of :data:`LAYER_COLUMNS` that at
least one layer has. Cells are plain text (the template escapes them) with a sort key.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from . import html_svg

MAX_BARS = 30


@dataclass(frozen=True)
class Cell:
    text: str
    sort: str | float


@dataclass
class HtmlTable:
    id: str
    columns: list[tuple[str, bool]]          # (label, numeric)
    rows: list[list[Cell]]
    filterable: bool = True


@dataclass
class Section:
    id: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[HtmlTable] = field(default_factory=list)
    svg: str | None = None                   # an <svg> element built by html_svg (names escaped)


def number_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.5g}"
    return str(value)


def _shapes(shapes) -> str:
    return " ".join("x".join(str(d) for d in shape) or "scalar" for shape in shapes or [])


def cell(value: Any, formatter: Callable[[Any], str] = number_text) -> Cell:
    if isinstance(value, bool):
        return Cell(formatter(value), float(value))
    if isinstance(value, (int, float)):
        return Cell(formatter(value), float(value))
    return Cell(formatter(value) if value is not None else "-", str(value) if value is not None else "")


LAYER_COLUMNS: tuple[tuple[str, str, bool, Callable[[Any], str]], ...] = (
    ("index", "#", True, number_text), ("name", "name", False, str), ("op", "op", False, str),
    ("input_shapes", "inputs", False, _shapes), ("output_shapes", "output", False, _shapes),
    ("macc", "MACC", True, number_text), ("params", "params", True, number_text),
    ("weight_bytes", "weights B", True, number_text), ("output_bytes", "output B", True, number_text),
    ("arena_offset", "arena offset", True, number_text), ("arena_size", "arena B", True, number_text),
    ("region", "region", False, str), ("kernel", "kernel", False, str), ("device", "device", False, str),
    ("reasons", "why not on the NPU", False, lambda reasons: "; ".join(reasons or [])),
    ("estimated_ms", "est. ms", True, number_text), ("cosine", "cosine", True, number_text),
    ("sqnr_db", "SQNR dB", True, number_text), ("max_abs_error", "max error", True, number_text),
    ("drop_db", "drop dB", True, number_text))


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, (str, list)) and not value)


def layer_section(layers: list[dict]) -> Section | None:
    if not layers:
        return None
    columns = [c for c in LAYER_COLUMNS if any(_present(layer.get(c[0])) for layer in layers)]
    if any("reasons" in layer for layer in layers) and not any(layer.get("device") == "npu" for layer in layers):
        columns = [c for c in columns if c[0] != "reasons"]   # CPU-only target: the reason is the same everywhere
    rows = [[cell(layer.get(key), formatter) for key, _, _, formatter in columns] for layer in layers]
    table = HtmlTable("layers", [(label, numeric) for _, label, numeric, _ in columns], rows)
    return Section("layers", f"Layers ({len(layers)})", ["Click a column header to sort; type to filter."], [table])


def table_of(table_id: str, records: list[dict], keys: list[str] | None = None) -> HtmlTable:
    """A table of dict rows; ``keys`` (default: every key, in first-seen order) are the columns."""
    if keys is None:
        keys = list(dict.fromkeys(key for record in records for key in record))
    numeric = [all(isinstance(r.get(k), (int, float)) or r.get(k) is None for r in records) for k in keys]
    rows = [[cell(record.get(key) if not isinstance(record.get(key), (list, dict)) else str(record.get(key)))
             for key in keys] for record in records]
    return HtmlTable(table_id, list(zip(keys, numeric)), rows)


def memory_section(plan: dict | None) -> Section | None:
    if not plan:
        return None
    section = Section("memory", "Memory", [plan.get("verdict", "")])
    section.tables.append(table_of("ledger", plan.get("ledger", []), ["item", "region", "bytes", "note"]))
    section.tables.append(table_of("regions", plan.get("regions", []),
                                   ["region", "kind", "used", "capacity", "overflow"]))
    tensors = {**plan.get("tensors", {}), **plan.get("scratch", {})}
    if tensors:
        section.svg = html_svg.memory_timeline(tensors, len(plan.get("order", [])), plan.get("arena_bytes", 0),
                                               plan.get("no_reuse_bound_bytes", plan.get("lower_bound_bytes", 0)))
        section.paragraphs.append(f"Memory timeline: {len(tensors)} buffers over {len(plan.get('order', []))} "
                                  "steps; hover a rectangle for its tensor.")
    return section


def latency_section(payload: dict, layers: list[dict]) -> Section | None:
    latency = payload.get("latency") or {}
    items = [(entry["name"], float(entry["ms"])) for entry in latency.get("layers", [])]
    if not items:
        items = [(layer["name"], float(layer["estimated_ms"])) for layer in layers
                 if layer.get("estimated_ms") is not None]
    if items:
        total = latency.get("total_ms", sum(ms for _, ms in items))
        items = sorted(items, key=lambda item: -item[1])[:MAX_BARS]
        return Section("latency", "Latency breakdown", [f"Estimated total {number_text(total)} ms; the "
                                                        f"{len(items)} slowest layers:"],
                       svg=html_svg.horizontal_bars(items, "ms", "latency per layer"))
    by_op: Counter[str] = Counter()
    for layer in layers:
        by_op[layer.get("op", "?")] += int(layer.get("macc") or 0)
    if not sum(by_op.values()):
        return None
    items = [(op, float(macc)) for op, macc in by_op.most_common(MAX_BARS) if macc]
    return Section("latency", "Compute breakdown", ["No latency estimate in this run; the multiply-accumulates "
                                                   "(MACC) per op type show where compute goes:"],
                   svg=html_svg.horizontal_bars(items, "MACC", "MACC per op type"))


def error_section(payload: dict, layers: list[dict]) -> Section | None:
    validation = payload.get("validation")
    measured = [layer for layer in layers if layer.get("sqnr_db") is not None or layer.get("cosine") is not None]
    if not validation and not measured:
        return None
    section = Section("accuracy", "Accuracy")
    if validation:
        section.paragraphs.append(f"Validation {validation.get('verdict', '?')} on {validation.get('samples', '?')} "
                                  f"samples ({validation.get('data', '')}).")
        if validation.get("hint"):
            section.paragraphs.append(f"Hint: {validation['hint']}")
        section.tables.append(table_of("outputs", validation.get("outputs", [])))
        section.tables.append(table_of("checks", validation.get("checks", [])))
    if measured:
        first_jump = ((validation or {}).get("per_layer") or {}).get("first_jump")
        section.svg = html_svg.layer_line_plot(
            {"SQNR dB": [layer.get("sqnr_db") for layer in measured], "cosine": [layer.get("cosine") for layer in measured]},
            [layer["name"] for layer in measured], first_jump, "per-layer quantization error")
        section.paragraphs.append("Per-layer error (float vs quantized) in execution order"
                                  + (f"; the error first jumps at {first_jump}." if first_jump else "."))
    return section


def model_section(analysis: dict | None) -> Section | None:
    if not analysis:
        return None
    rows = [{"": kind, "name": tensor["name"], "dtype": tensor["dtype"], "shape": _shapes([tensor["shape"]]),
             "layout": tensor.get("layout") or "-",
             "scale": tensor["scale"][0] if tensor.get("scale") and len(tensor["scale"]) == 1 else None,
             "zero point": tensor["zero_point"][0] if tensor.get("zero_point") and len(tensor["zero_point"]) == 1 else None,
             "bytes": tensor["bytes"]}
            for kind in ("input", "output") for tensor in analysis.get(f"{kind}s", [])]
    return Section("model", "Model", [f"{analysis.get('model', '')} ({analysis.get('format', '')}), "
                                      f"{number_text(analysis.get('total_macc'))} MACC, "
                                      f"{number_text(analysis.get('params'))} parameters."],
                   [table_of("io", rows)])


def workflow_section(workflow: dict | None) -> Section | None:
    """``mcudeploy deploy``'s report run: the results-table row and every stage's status."""
    if not workflow or not workflow.get("stages"):
        return None
    stopped = workflow.get("stopped_at")
    verdict = (f"Stopped at stage {stopped}: {workflow.get('reason')}" if stopped else
               "Every stage passed.")
    fallback = workflow.get("fallback")
    paragraphs = [f"Deploy {workflow.get('deploy')} of {workflow.get('project')}. {verdict}"]
    if fallback:
        paragraphs.append(f"Fallback configuration: step '{fallback.get('step')}' ({fallback.get('config')}).")
    row = table_of("results-row", [workflow.get("row", {})])
    row.filterable = False
    stages = table_of("stages", workflow["stages"], ["stage", "status", "run", "seconds", "summary", "from"])
    return Section("workflow", "Deployment stages", paragraphs, [row, stages])


def _pareto_points(cells: list[dict], axes: list[dict], front: set[int]) -> list[tuple[float, float, str, bool]]:
    x_metric, y_metric = axes[0]["metric"], axes[1]["metric"]
    return [(float(row[x_metric]), float(row[y_metric]),
             f"cell {row['cell']}: {row.get('model')} on {row.get('target')}, {row.get('option_set')}: "
             f"{x_metric} {number_text(row[x_metric])}, {y_metric} {number_text(row[y_metric])}",
             row["cell"] in front)
            for row in cells if row.get("status") == "ok" and row.get(x_metric) is not None
            and row.get(y_metric) is not None]


def sweep_section(sweep: dict | None) -> Section | None:
    """``mcudeploy sweep``'s run: the Pareto front over latency, on-chip RAM and accuracy (the
    measured axes; the others said "not measured"), a scatter of the first two, every cell."""
    if not sweep or not sweep.get("cells"):
        return None
    info, pareto, cells = sweep.get("sweep", {}), sweep.get("pareto", {}), sweep["cells"]
    counts = info.get("counts", {})
    axes, front = pareto.get("axes", []), set(pareto.get("front", []))
    measured = ", ".join(f"{a['axis']} ({a['metric']}, {a['better']} is better)" for a in axes) or "nothing"
    paragraphs = [f"Sweep {info.get('name')} ({info.get('id')}): {info.get('cells')} cells, stages "
                  f"{', '.join(info.get('stages', []))}; {counts.get('ok', 0)} ok, {counts.get('failed', 0)} failed, "
                  f"{counts.get('timeout', 0)} timed out, {counts.get('resumed', 0)} from the run store.",
                  f"Pareto front over {measured}: {len(front)} of {pareto.get('candidates', 0)} candidate cells "
                  "(finished, fitting, every axis measured)."
                  + "".join(f" {label}: not measured." for label in pareto.get("not_measured", []))]
    section = Section("sweep", "Sweep: Pareto front", paragraphs)
    if len(axes) >= 2:
        section.svg = html_svg.scatter_plot(_pareto_points(cells, axes, front), axes[0]["metric"], axes[1]["metric"],
                                            "Pareto front", log_x=axes[0]["axis"] == "latency")
    marked = [{"front": "*" if row.get("cell") in front else "", **row} for row in cells]
    section.tables.append(table_of("sweep-front", [row for row in marked if row["front"]]))
    section.tables.append(table_of("sweep-cells", marked))
    return section


def other_sections(payload: dict) -> list[Section]:
    sections = []
    if payload.get("lint", {}).get("findings"):
        sections.append(Section("lint", "Lint findings", tables=[table_of(
            "findings", payload["lint"]["findings"], ["severity", "rule", "node", "message", "why", "fix"])]))
    quantization = payload.get("quantization")
    if quantization and quantization.get("layers"):
        sections.append(Section("quantization", "Quantization", [
            f"Output SQNR {number_text(quantization.get('output_sqnr_db'))} dB, cosine "
            f"{number_text(quantization.get('output_cosine'))}, observer {quantization.get('observer')}."],
            [table_of("quantized-layers", quantization["layers"])]))
    if payload.get("trials"):
        sections.append(Section("trials", f"Search trials ({len(payload['trials'])})",
                                tables=[table_of("trials", payload["trials"])]))
    return sections
