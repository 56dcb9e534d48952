"""Fit the estimator's per-core constants to latencies measured on real boards.

    calibrate(rows, models_root=None) -> Calibration   (its ``overlay`` is written with
                                                      ``overlay_toml``; ``--overlay`` reads it)

Input rows (a CSV like ``published_latency/mlperf_tiny_stm32.csv``): ``model`` (a path:
absolute, relative to the CSV's folder or to ``models_root``), the board as ``target`` (a
built-in name or a ``.toml`` file) or ``soc`` (``STM32L4R5ZIT6U`` -> built-in ``stm32l4r5``), the
clock as ``cpu_mhz`` (or ``clock_mhz``), ``framework`` (the runtime label; ``label`` overrides
it), optional ``runtime`` (the profile; default ``mcudeploy`` for a framework named mcudeploy,
else ``cmsis-nn``) and
``latency_ms``.

Model: every row is estimated with the prior constants (``data/cores.toml``) at its clock,
split into CPU work ``C`` (compute + overhead cycles, which scale with CPI), CPU wait cycles
``M`` (set by the memories, not by the core) and NPU time ``N``. Then

    t(row) = (sum_class C_class t_class  k_core s_label + M) / f + N

and the log-least-squares fit over every row gives one factor ``k`` per core family (pulled
towards 1, the public-source prior, with weight ``1 / CORE_PRIOR_SPREAD``), one ``s`` per
runtime label (weakly pulled towards 1) and one ``t`` per kernel class of a framework
(``data/runtimes.toml`` ``kernel_classes``; the framework of ``x-cube-ai 10.2`` is
``x-cube-ai``: shared by all its versions, so each ``t`` is set by many rows; pulled towards 1
with ``1 / CLASS_PRIOR_SPREAD``), by Gauss-Newton. The overlay stores ``cpi = prior x k``
for the code class the rows ran, ``scale = s`` per label, ``class_scale = t`` per framework,
plus a framework label (the geometric mean of its versions' scales) for versions measured on
no board yet.

Bad rows are named, all at once: a model or board it cannot find, a missing column, a latency
that is not a positive finite number (:class:`~mcudeploy.errors.DataError`).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError, UsageError
from ..targets import builtin_names
from .estimator import estimate
from .overlay import Overlay, framework_of, normal_label
from .profiles import core_model, core_models, runtime_profiles

CORE_PRIOR_SPREAD = 0.2      # log-spread of the public-source CPI figures
LABEL_PRIOR_SPREAD = 1.0
CLASS_PRIOR_SPREAD = 0.5     # a library of the same class: kernels within ~x1.6 of the profile's
RESIDUAL_SPREAD = 0.1
REQUIRED = ("model", "latency_ms")


@dataclass
class Row:
    line: int
    model: Path
    target: str
    clock_hz: float
    label: str
    profile: str
    measured_ms: float
    family: str = ""
    work: float = 0.0          # C: CPU cycles that scale with CPI
    work_by_class: dict[str, float] = field(default_factory=dict)   # C split by kernel class ("" = none)
    waits: float = 0.0         # M: CPU wait cycles
    npu_us: float = 0.0        # N
    predicted_ms: float = 0.0


@dataclass
class Calibration:
    overlay: Overlay
    rows: list[Row]
    factors: dict[str, float] = field(default_factory=dict)     # core family -> k
    scales: dict[str, float] = field(default_factory=dict)      # label -> s

    def errors(self) -> list[float]:
        return [row.predicted_ms / row.measured_ms - 1.0 for row in self.rows]


def target_for(soc: str) -> str | None:
    text = soc.strip().lower()
    text = text if text.startswith("stm32") else "stm32" + text
    matches = [name for name in builtin_names() if text.startswith(name)]
    return max(matches, key=len) if matches else None


def _resolve_model(text: str, folder: Path, models_root: Path | None) -> Path | None:
    path = Path(text)
    for candidate in ([path] if path.is_absolute() else [folder / path] + ([models_root / path] if models_root else [])):
        if candidate.is_file():
            return candidate
    return None


def _latency(text: Any, line: int, source: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise DataError(f"{source} line {line}: latency_ms {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise DataError(f"{source} line {line}: latency_ms {text!r} must be a positive finite number of ms")
    return value


def _row(record: dict, line: int, source: str, folder: Path, models_root: Path | None,
         problems: list[str]) -> Row | None:
    model = _resolve_model(record.get("model", ""), folder, models_root)
    target = record.get("target") or target_for(record.get("soc", "") or "")
    clock = record.get("cpu_mhz") or record.get("clock_mhz")
    label = normal_label(record.get("label") or record.get("framework") or "unlabelled")
    default = "mcudeploy" if label.startswith("mcudeploy") else "cmsis-nn"   # our own code, else the library class
    profile = (record.get("runtime") or default).strip()
    latency = _latency(record.get("latency_ms"), line, source)
    if model is None:
        problems.append(f"line {line}: model {record.get('model')!r} not found (relative to {folder}"
                        + (f" or {models_root}" if models_root else "") + ")")
    if target is None:
        problems.append(f"line {line}: board {record.get('soc') or record.get('target')!r} is no built-in target "
                        "(add a target file and give its path in a 'target' column)")
    if profile not in runtime_profiles():
        problems.append(f"line {line}: runtime {profile!r} is not one of {', '.join(runtime_profiles())}")
    if model is None or target is None or profile not in runtime_profiles():
        return None
    try:
        clock_hz = float(clock) * 1e6 if clock else 0.0
    except ValueError:
        clock_hz = -1.0
    if clock is not None and not clock_hz > 0:
        problems.append(f"line {line}: clock {clock!r} MHz is not a positive number")
        return None
    return Row(line, model, target, clock_hz, label, profile, latency)


def read_rows(path: Path, models_root: Path | None = None) -> list[Row]:
    """The rows of a measured-latency CSV, every problem named (module docstring)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            records = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise UsageError(f"--calibrate {path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"--calibrate {path}: not a readable CSV file ({err})") from None
    columns = set(records[0]) if records else set()
    missing = [c for c in REQUIRED if c not in columns] + ([] if {"soc", "target"} & columns else ["soc or target"])
    if missing or not records:
        raise UsageError(f"--calibrate {path}: missing column(s) {', '.join(missing) or '(no rows)'}; expected "
                         "model, soc or target, cpu_mhz, framework, latency_ms")
    problems: list[str] = []
    rows = [row for line, record in enumerate(records, start=2)
            if (row := _row(record, line, str(path), path.parent, models_root, problems)) is not None]
    if problems:
        raise UsageError(f"--calibrate {path}: {len(problems)} row(s) cannot be used: " + "; ".join(problems[:12])
                         + (" ..." if len(problems) > 12 else ""))
    return rows


def measure_rows(rows: list[Row], deploy_function) -> None:
    """Fill each row's ``C``, ``M``, ``N`` (module docstring) from the prior estimate.
    ``deploy_function(model, target) -> Deployment`` (cached by the caller)."""
    for row in rows:
        deployment = deploy_function(row.model, row.target)
        result = estimate(deployment, runtime=row.profile, core_clock_hz=row.clock_hz or None)
        clock = result.core_clock_hz
        row.clock_hz = clock
        row.family = core_model(deployment.target.core).family
        cpu = [layer for layer in result.layers if layer.device == "cpu" and layer.known]
        classes = runtime_profiles()[row.profile].kernel_classes
        row.work_by_class = {"": result.overhead_us * 1e-6 * clock}
        for layer in cpu:
            group = classes.get(layer.kernel.removesuffix("_s16"), "")
            row.work_by_class[group] = row.work_by_class.get(group, 0.0) + layer.compute_cycles + layer.overhead_cycles
        row.work = sum(row.work_by_class.values())
        row.waits = sum(layer.memory_cycles for layer in cpu)
        row.npu_us = sum(layer.time_us for layer in result.layers if layer.device == "npu")


@dataclass
class Factors:
    """The fitted factors: per core family ``k``, per runtime label ``s``, per (framework, kernel
    class) ``t``; 1 for anything not fitted."""
    cores: dict[str, float]
    labels: dict[str, float]
    classes: dict[tuple[str, str], float]

    def class_factor(self, row: Row, group: str) -> float:
        return self.classes.get((framework_of(row.label), group), 1.0) if group else 1.0

    def work(self, row: Row) -> float:
        return sum(cycles * self.class_factor(row, group) for group, cycles in row.work_by_class.items())

    def predict(self, row: Row) -> float:
        scaled = self.work(row) * self.cores.get(row.family, 1.0) * self.labels.get(row.label, 1.0)
        return (scaled + row.waits) / row.clock_hz * 1e3 + row.npu_us / 1e3


def _unpack(theta: np.ndarray, families, labels, classes) -> Factors:
    values = np.exp(theta)
    return Factors(dict(zip(families, values[:len(families)].tolist())),
                   dict(zip(labels, values[len(families):len(families) + len(labels)].tolist())),
                   dict(zip(classes, values[len(families) + len(labels):].tolist())))


def _jacobian_row(row: Row, factors: Factors, predicted: float, index_of: dict, size: int) -> np.ndarray:
    """d log t / d log parameter for one row (the share of the time each parameter scales)."""
    gradient = np.zeros(size)
    scale = factors.cores.get(row.family, 1.0) * factors.labels.get(row.label, 1.0) / row.clock_hz * 1e3
    total = factors.work(row) * scale / predicted
    gradient[index_of["core", row.family]] = total
    gradient[index_of["label", row.label]] = total
    for group, cycles in row.work_by_class.items():
        if group:
            gradient[index_of["class", (framework_of(row.label), group)]] = (cycles * factors.class_factor(row, group)
                                                                             * scale / predicted)
    return gradient


def fit_factors(rows: list[Row], iterations: int = 40) -> Factors:
    """Gauss-Newton on log residuals with the priors of the module docstring."""
    families = sorted({r.family for r in rows})
    labels = sorted({r.label for r in rows})
    classes = sorted({(framework_of(r.label), group) for r in rows for group, cycles in r.work_by_class.items()
                      if group and cycles})
    index_of: dict[tuple[str, object], int] = {**{("core", f): i for i, f in enumerate(families)},
                **{("label", name): len(families) + i for i, name in enumerate(labels)},
                **{("class", c): len(families) + len(labels) + i for i, c in enumerate(classes)}}
    prior = np.concatenate([np.full(len(families), 1 / CORE_PRIOR_SPREAD), np.full(len(labels), 1 / LABEL_PRIOR_SPREAD),
                            np.full(len(classes), 1 / CLASS_PRIOR_SPREAD)])
    theta = np.zeros(prior.size)
    measured = np.log([r.measured_ms for r in rows])
    for _ in range(iterations):
        factors = _unpack(theta, families, labels, classes)
        predicted = np.array([factors.predict(row) for row in rows])
        residual = (np.log(predicted) - measured) / RESIDUAL_SPREAD
        jacobian = np.array([_jacobian_row(row, factors, p, index_of, theta.size) for row, p in zip(rows, predicted)])
        system = np.vstack([jacobian / RESIDUAL_SPREAD, np.diag(prior)])
        step, *_ = np.linalg.lstsq(system, -np.concatenate([residual, prior * theta]), rcond=None)
        theta += step
        if np.max(np.abs(step)) < 1e-7:
            break
    return _unpack(theta, families, labels, classes)


def _framework_scales(rows: list[Row], scales: dict[str, float]) -> dict[str, float]:
    """Geometric mean scale of each framework over its labels' rows."""
    logs: dict[str, list[float]] = {}
    for row in rows:
        logs.setdefault(framework_of(row.label), []).append(math.log(scales[row.label]))
    return {framework: math.exp(sum(values) / len(values)) for framework, values in logs.items()
            if framework and framework not in scales}


def calibrate(rows: list[Row], deploy_function, source: str = "") -> Calibration:
    """Fit the overlay to ``rows`` (module docstring)."""
    measure_rows(rows, deploy_function)
    fitted = fit_factors(rows)
    factors, scales = fitted.cores, fitted.labels
    predicted = [fitted.predict(row) for row in rows]
    for row, value in zip(rows, predicted):
        row.predicted_ms = float(value)
    overlay = Overlay(source or "calibration")
    profiles_of: dict[str, set[str]] = {}
    for row in rows:
        profiles_of.setdefault(row.family, set()).add(row.profile)
    for family, names in profiles_of.items():
        prior = core_models()[family]
        classes = {runtime_profiles()[name].class_of("default", prior.build == "cortex-m55") for name in names}
        overlay.cpi[family] = {name: prior.cpi[name] * factors[family] for name in sorted(classes)}
    profile_of = {row.label: row.profile for row in rows}
    overlay.runtimes = {label: (profile_of[label], scale) for label, scale in scales.items()}
    for framework, scale in _framework_scales(rows, scales).items():
        overlay.runtimes[framework] = (profile_of[next(r.label for r in rows if framework_of(r.label) == framework)], scale)
    for (framework, group), value in fitted.classes.items():
        overlay.class_scales.setdefault(framework, {})[group] = value
    errors = [abs(p / r.measured_ms - 1) for p, r in zip(predicted, rows)]
    overlay.header = (f"mcudeploy estimate --calibrate {source}: {len(rows)} rows, "
                      f"{datetime.now(timezone.utc).strftime('%Y-%m-%d')}\n"
                      f"fit error: median {np.median(errors):.1%}, worst {max(errors):.1%}\n"
                      f"cores: " + ", ".join(f"{f} x{k:.3f}" for f, k in sorted(factors.items())) + "; kernel classes: "
                      + ", ".join(f"{p}/{g} x{v:.3f}" for (p, g), v in sorted(fitted.classes.items())))
    return Calibration(overlay, rows, factors, scales)
