"""Inline SVG pictures for the HTML report: memory timeline, horizontal bars, a per-layer line plot,
a sweep's Pareto scatter.

Every function returns one ``<svg>`` element as text; every name in it (tooltips, labels)
is escaped by :func:`escape` (:func:`html.escape` of the text without control and bidi
characters, :func:`~.console.printable`), so model-derived strings are text, never markup.

Memory timeline: tensor t is the rectangle ``x in [first_step, last_step + 1)``,
``y in [offset, offset + size)`` (arena addresses grow upwards); tensors that share bytes
by a proved reuse (``alias_of``) are drawn lighter; the dashed line is the arena size, the
dotted one the live-set bound without reuse.
"""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

from .console import printable

WIDTH, HEIGHT, MARGIN = 1000, 340, 40


def escape(text: Any) -> str:
    """``text`` for HTML: control and bidi characters dropped (a sweep name or a project version
    may hold ESC or U+202E), ``& < > " '`` escaped."""
    return html.escape(printable(text))


PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.4g}"


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
            f'role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>")


def _text(x: float, y: float, content: str, anchor: str = "start", size: int = 11, extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" {extra}>'
            f"{escape(content)}</text>")


def _step_ticks(steps: int, count: int = 10) -> list[int]:
    """About ``count`` round step numbers from 0 to ``steps`` (1, 2, 5 x 10^k apart)."""
    if steps <= 0:
        return [0]
    raw = steps / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    spacing = next((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw), 10 * magnitude)
    spacing = max(1, int(spacing))
    return list(range(0, steps + 1, spacing))


def memory_timeline(tensors: dict[str, dict], steps: int, arena_bytes: int, lower_bound: int) -> str:
    """The plan's tensors over execution steps (module docstring). The left margin holds the
    offset labels (up to 11 characters) clear of the rotated axis title; the step axis is
    numbered."""
    left = 2 * MARGIN + 10
    top = max([arena_bytes, lower_bound, 1] + [t["offset"] + t["size"] for t in tensors.values()])
    plot_w, plot_h = WIDTH - left - MARGIN, HEIGHT - 2 * MARGIN
    x_of = lambda step: left + plot_w * step / max(1, steps)  # noqa: E731
    y_of = lambda address: HEIGHT - MARGIN - plot_h * address / top  # noqa: E731
    body = [f'<rect x="{left}" y="{MARGIN}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>']
    for index, (name, tensor) in enumerate(tensors.items()):
        x0, x1 = x_of(tensor["first_step"]), x_of(tensor["last_step"] + 1)
        y0, y1 = y_of(tensor["offset"] + tensor["size"]), y_of(tensor["offset"])
        opacity = 0.45 if tensor.get("alias_of") else 0.85
        tip = (f"{name}: {tensor['size']} bytes at offset {tensor['offset']}, steps {tensor['first_step']}"
               f"-{tensor['last_step']}" + (f", shares bytes with {tensor['alias_of']}" if tensor.get("alias_of") else ""))
        body.append(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(0.5, x1 - x0):.1f}" height="{max(0.5, y1 - y0):.1f}" '
                    f'fill="{PALETTE[index % len(PALETTE)]}" fill-opacity="{opacity}" stroke="#333" '
                    f'stroke-width="0.3"><title>{escape(tip)}</title></rect>')
    body += _limit_lines(left, y_of(arena_bytes), y_of(lower_bound), arena_bytes, lower_bound)
    for step in _step_ticks(steps):
        body.append(f'<line x1="{x_of(step):.1f}" x2="{x_of(step):.1f}" y1="{HEIGHT - MARGIN}" '
                    f'y2="{HEIGHT - MARGIN + 4}" stroke="#888"/>')
        body.append(_text(x_of(step), HEIGHT - MARGIN + 14, str(step), "middle", 9))
    body.append(_text(left + plot_w / 2, HEIGHT - 6, "step (node in execution order)", "middle"))
    body.append(_text(14, HEIGHT / 2, "arena offset (bytes)", "middle", 11,
                      f'transform="rotate(-90 14 {HEIGHT / 2})"'))
    body += [_text(left - 4, y_of(v) + 4, f"{v:,}", "end", 9) for v in (0, top // 2, top)]
    return _svg(WIDTH, HEIGHT, body, "memory timeline")


def _limit_lines(left: float, arena_y: float, bound_y: float, arena_bytes: int, lower_bound: int) -> list[str]:
    """The dashed arena line and the dotted no-reuse bound, each labelled above its line; when
    the two lines are closer than a label's height (a plan without reuse: equal), the lower
    one's label goes below its line, so the two never overlap."""
    lines = [(arena_y, f"arena {arena_bytes} B", "6,3"), (bound_y, f"no-reuse bound {lower_bound} B", "2,2")]
    lower_on_page = max(range(2), key=lambda index: (lines[index][0], index))
    body = []
    for index, (y, label, dash) in enumerate(lines):
        below = index == lower_on_page and abs(arena_y - bound_y) < 12
        body.append(f'<line x1="{left}" x2="{WIDTH - MARGIN}" y1="{y:.1f}" y2="{y:.1f}" '
                    f'stroke="#c00" stroke-dasharray="{dash}"/>')
        body.append(_text(WIDTH - MARGIN, y + 11 if below else y - 3, label, "end", 10, 'fill="#c00"'))
    return body


def bar_labels(names: Sequence[str], limit: int = 38) -> list[str]:
    """Labels that tell the bars apart within ``limit`` characters: the path prefix every name
    shares (up to a ``/``) is dropped, and a longer name keeps its end (``...`` + the last
    characters), where names of one model differ; the full name is the bar's tooltip."""
    shared = ""
    if len(names) > 1:
        common = names[0]
        for name in names[1:]:
            while not name.startswith(common):
                common = common[:-1]
        shared = common[:common.rfind("/") + 1]
    labels = []
    for name in names:
        text = name[len(shared):] or name
        labels.append(text if len(text) <= limit else "..." + text[-(limit - 3):])
    return labels


def horizontal_bars(items: Sequence[tuple[str, float]], unit: str, label: str) -> str:
    """One bar per ``(name, value)``, largest first as given; values labelled with ``unit``."""
    row, left = 18, 260
    height = 2 * 12 + row * max(1, len(items))
    peak = max([value for _, value in items] + [1e-12])
    body = []
    for index, ((name, value), text) in enumerate(zip(items, bar_labels([name for name, _ in items]))):
        y = 12 + index * row
        width = (WIDTH - left - 120) * value / peak
        body.append(_text(left - 6, y + 12, text, "end"))
        body.append(f'<rect x="{left}" y="{y + 2}" width="{max(0.5, width):.1f}" height="{row - 5}" '
                    f'fill="{PALETTE[0]}"><title>{escape(f"{name}: {value:.6g} {unit}")}</title></rect>')
        body.append(_text(left + width + 6, y + 12, f"{_number(value)} {unit}"))
    return _svg(WIDTH, height, body, label)


def layer_line_plot(series: dict[str, list[float | None]], names: Sequence[str], marked: str | None,
                    label: str) -> str:
    """Lines of per-layer values (e.g. SQNR dB and cosine) over layer index; ``marked`` is
    the layer drawn with a vertical line (the first jump). ``None`` values are gaps."""
    plot_w, plot_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN
    count = max(1, len(names) - 1)
    body = [f'<rect x="{MARGIN}" y="{MARGIN}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>']
    for index, (series_name, values) in enumerate(series.items()):
        known = [v for v in values if v is not None]
        if not known:
            continue
        low, high = min(known), max(known)
        span = (high - low) or 1.0
        points = [(MARGIN + plot_w * i / count, HEIGHT - MARGIN - plot_h * (v - low) / span)
                  for i, v in enumerate(values) if v is not None]
        colour = PALETTE[index % len(PALETTE)]
        body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="'
                    + " ".join(f"{x:.1f},{y:.1f}" for x, y in points) + '"/>')
        for (x, y), i in zip(points, [i for i, v in enumerate(values) if v is not None]):
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"><title>'
                        f'{escape(f"{names[i]}: {series_name} {values[i]:.5g}")}</title></circle>')
        body.append(_text(MARGIN + 8, MARGIN + 16 + 14 * index,
                          f"{series_name} ({low:.4g} .. {high:.4g})", extra=f'fill="{colour}"'))
    if marked is not None and marked in names:
        x = MARGIN + plot_w * list(names).index(marked) / count
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#c00" '
                    'stroke-dasharray="4,3"/>')
        body.append(_text(x + 4, HEIGHT - MARGIN - 6, f"first jump: {marked}", size=10, extra='fill="#c00"'))
    body.append(_text(WIDTH / 2, HEIGHT - 14, "layer (execution order); each line scaled to its own range",
                      "middle"))
    return _svg(WIDTH, HEIGHT, body, label)


def scatter_plot(points: Sequence[tuple[float, float, str, bool]], x_label: str, y_label: str, label: str,
                 log_x: bool = False) -> str:
    """``(x, y, tooltip, highlighted)`` points (a sweep's cells; the highlighted ones - the
    Pareto front - ringed in red and joined as a staircase in x order); x on a log scale
    when ``log_x`` and every x is positive."""
    log_x = log_x and all(x > 0 for x, _, _, _ in points)
    xs = [math.log10(x) if log_x else x for x, _, _, _ in points] or [0.0]
    ys = [y for _, y, _, _ in points] or [0.0]
    x_low, x_span = min(xs), (max(xs) - min(xs)) or 1.0
    y_low, y_span = min(ys), (max(ys) - min(ys)) or 1.0
    plot_w, plot_h = WIDTH - 3 * MARGIN, HEIGHT - 2 * MARGIN
    x_of = lambda x: 2 * MARGIN + plot_w * (x - x_low) / x_span  # noqa: E731
    y_of = lambda y: HEIGHT - MARGIN - plot_h * (y - y_low) / y_span  # noqa: E731
    body = [f'<rect x="{2 * MARGIN}" y="{MARGIN}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>']
    front = sorted((x_of(x), y_of(y)) for x, y, (_, _, _, marked) in zip(xs, ys, points) if marked)
    if front:
        steps = [front[0]] + [p for a, b in zip(front, front[1:]) for p in ((b[0], a[1]), b)]
        body.append('<polyline fill="none" stroke="#c00" stroke-width="1" points="'
                    + " ".join(f"{x:.1f},{y:.1f}" for x, y in steps) + '"/>')
    for x, y, (_, _, tip, marked) in zip(xs, ys, points):
        ring = ' stroke="#c00" stroke-width="2"' if marked else ""
        body.append(f'<circle cx="{x_of(x):.1f}" cy="{y_of(y):.1f}" r="{5 if marked else 3.5}" '
                    f'fill="{PALETTE[0]}" fill-opacity="0.8"{ring}><title>{escape(tip)}</title></circle>')
    low_text = f"{10 ** x_low:.4g}" if log_x else f"{x_low:.4g}"
    high_text = f"{10 ** (x_low + x_span):.4g}" if log_x else f"{x_low + x_span:.4g}"
    body.append(_text(2 * MARGIN, HEIGHT - MARGIN + 14, low_text, size=9))
    body.append(_text(WIDTH - MARGIN, HEIGHT - MARGIN + 14, high_text, "end", 9))
    body.append(_text(WIDTH / 2, HEIGHT - 8, x_label + (" (log scale)" if log_x else ""), "middle"))
    body += [_text(2 * MARGIN - 4, y_of(v) + 4, _number(v), "end", 9) for v in (y_low, y_low + y_span)]
    body.append(_text(14, HEIGHT / 2, y_label, "middle", 11, f'transform="rotate(-90 14 {HEIGHT / 2})"'))
    return _svg(WIDTH, HEIGHT, body, label)
