"""Fit the estimator's constants to latencies measured on real boards.

    read_rows(csv) -> [Measurement]          calibrate(rows, deploy) -> Calibration
    (its ``overlay`` is written with ``overlay_toml``; ``--overlay`` reads it)

Input rows (a CSV like ``published_latency/mlperf_tiny_stm32.csv``): ``model`` (a path:
absolute, relative to the CSV's folder or to ``models_root``), ``latency_ms``, the board as
``target`` (a built-in name or a ``.toml`` file), ``soc`` (``STM32L4R5ZIT6U`` -> built-in
``stm32l4r5``) or ``board``; the clock as ``cpu_mhz`` (or ``clock_mhz``); ``framework`` (the
runtime label; ``label`` overrides it); optional ``runtime`` (the profile; default
``mcudeploy`` for a framework named mcudeploy, else ``cmsis-nn``). A board that is no built-in
target needs a ``core`` column (``Cortex-M33``; for an STM32 part number in ``soc`` the core of
its series, :data:`STM32_SERIES_CORES`) and a clock: it is estimated on the memories of
a built-in target of its STM32 series, else of its core (:func:`proxy_target`), at its own clock, and the
fitted constants are those of its core family.

Model and fit: :mod:`.latency_fit` (one CPI factor per core family, one scale per runtime label,
one factor per framework and kernel class, one flash cost per weight byte; regularised toward
the shipped defaults, :func:`shipped_model`: a few rows of one board refine the public fit). The overlay stores ``cpi = prior x k`` for every code class of the fitted
families, ``scale = s`` per label (and per framework: the geometric mean of its versions, for a
version measured on no board), ``class_scale = t`` per framework and the flash cost.

Bad input is one :class:`~mcudeploy.errors.UsageError` / :class:`~mcudeploy.errors.DataError`
naming every bad row at once: a model or board it cannot find, a missing column, a latency that
is not a positive finite number, a non-built-in board without its core and clock, fewer rows
than :data:`MINIMUM_ROWS`.
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
from ..targets import TargetError, builtin_names
from .estimator import estimate
from .latency_fit import REST, FittedModel, Measurement, fit
from .overlay import Overlay, framework_of, normal_label, shipped_overlay
from .profiles import CODE_CLASSES, core_model, core_models, runtime_profiles

REQUIRED = ("model", "latency_ms")
MINIMUM_ROWS = 2
# a board that is no built-in target runs on the memories of this target of its core family
PROXY_TARGETS = {"cortex-m0plus": "stm32g0b1", "cortex-m3": "stm32f103", "cortex-m4": "stm32l4r5",
                 "cortex-m33": "stm32u575", "cortex-m7": "stm32f746", "cortex-m55": "stm32n6"}
Row = Measurement      # the name the benchmark and older callers use
# the core of each STM32 series (ST's product-line pages), for a part number no built-in target has
STM32_SERIES_CORES = {"c0": "Cortex-M0+", "g0": "Cortex-M0+", "l0": "Cortex-M0+", "u0": "Cortex-M0+",
                      "f0": "Cortex-M0", "f1": "Cortex-M3", "f2": "Cortex-M3", "l1": "Cortex-M3",
                      "f3": "Cortex-M4", "f4": "Cortex-M4", "g4": "Cortex-M4", "l4": "Cortex-M4", "wb": "Cortex-M4",
                      "wl": "Cortex-M4", "f7": "Cortex-M7", "h7": "Cortex-M7", "l5": "Cortex-M33", "u3": "Cortex-M33",
                      "u5": "Cortex-M33", "h5": "Cortex-M33", "wba": "Cortex-M33", "n6": "Cortex-M55"}


# the built-in target whose memories stand in for a board of that STM32 series
SERIES_PROXIES = {"h7": "stm32h743", "f7": "stm32f746", "f4": "stm32f407", "f1": "stm32f103", "l4": "stm32l4r5",
                  "u5": "stm32u575", "u3": "stm32u385", "g0": "stm32g0b1", "n6": "stm32n6"}


def _series(part: str) -> str:
    text = part.strip().lower().removeprefix("stm32")
    return next((text[:length] for length in (3, 2) if text[:length] in STM32_SERIES_CORES), "")


def series_core(part: str) -> str:
    """The core of an STM32 part number (``STM32U3C5ZIT6``, ``U3C5ZIT6`` -> Cortex-M33), "" if unknown."""
    return STM32_SERIES_CORES.get(_series(part), "")


def proxy_target(part: str, core_name: str) -> tuple[str, str] | None:
    """(target, core family) a board no built-in target describes is estimated on: the built-in of
    its STM32 series when that series has this core, else the first of the core family
    (:data:`PROXY_TARGETS`); None for a core the estimator does not know."""
    family = _family(core_name)
    if family is None or family not in PROXY_TARGETS:
        return None
    series = _series(part)
    if series in SERIES_PROXIES and _family(STM32_SERIES_CORES[series]) == family:
        return SERIES_PROXIES[series], family
    return PROXY_TARGETS[family], family


@dataclass
class Calibration:
    overlay: Overlay
    rows: list[Measurement]
    model: FittedModel
    factors: dict[str, float] = field(default_factory=dict)     # core family -> k
    scales: dict[str, float] = field(default_factory=dict)      # label -> s

    def errors(self) -> list[float]:
        return [row.predicted_ms / row.measured_ms - 1.0 for row in self.rows]


def target_for(soc: str) -> str | None:
    text = soc.strip().lower().replace("-", "").replace("_", "")
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


def _clock(record: dict, line: int, problems: list[str]) -> float | None:
    text = record.get("cpu_mhz") or record.get("clock_mhz")
    if not text:
        return 0.0
    try:
        value = float(text) * 1e6
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value > 0):
        problems.append(f"line {line}: clock {text!r} MHz is not a positive number")
        return None
    return value


def _board(record: dict, line: int, clock_hz: float, problems: list[str]) -> tuple[str, str, str] | None:
    """(board, target the estimate runs on, core family) of a row, or None with the problem named."""
    if record.get("target"):
        return record["target"], record["target"], ""
    board = (record.get("soc") or record.get("board") or "").strip()
    target = target_for(board) if board else None
    if target is not None:
        return target, target, ""
    core_name = (record.get("core") or "").strip() or (series_core(board) if record.get("soc") else "")
    if not core_name or not clock_hz:
        missing = " and ".join(what for what, given in (("core (column core, e.g. Cortex-M33)", core_name),
                                                         ("clock (column cpu_mhz)", clock_hz)) if not given)
        problems.append(f"line {line}: board {board!r} is no built-in target; give its core and clock: "
                        f"missing {missing}, or name a target file in a 'target' column")
        return None
    proxy = proxy_target(board if record.get("soc") else "", core_name)
    if proxy is None:
        problems.append(f"line {line}: core {core_name!r} of board {board!r} is not one the estimator knows "
                        f"({', '.join(sorted(PROXY_TARGETS))})")
        return None
    return board, proxy[0], proxy[1]


def _family(core_name: str) -> str | None:
    from ..targets import Core
    try:
        return core_model(Core(name=core_name, clock_hz=1.0)).family
    except (TargetError, TypeError):
        return None


SHORT_NAMES = {"bosch hardware-aware lowering engine (hale) version": "bosch hale",
               "plumerai inference engine": "plumerai"}


def label_of(record: dict) -> str:
    """The runtime label of a CSV row: its framework and version (:func:`.overlay.normal_label`,
    long names shortened), with two refinements where the framework hides two code paths:
    microTVM with CMSIS-NN kernels (``CMSIS`` in the ``system`` name) or TVM's own, and builds
    tuned for speed (``max_performance`` in the system name)."""
    framework, system = record.get("framework") or "unlabelled", (record.get("system") or "").upper()
    label = normal_label(framework)
    for long, short in SHORT_NAMES.items():
        label = label.replace(long, short)
    if label == "microtvm":
        label = "microtvm cmsis-nn" if "CMSIS" in system else "microtvm native"
    if "MAX_PERFORMANCE" in system:      # "bosch hale 1.0.175" -> "bosch hale max-performance 1.0.175"
        name, _, version = label.rpartition(" ")
        label = f"{name} max-performance {version}"
    return label


def _row(record: dict, line: int, source: str, folder: Path, models_root: Path | None,
         problems: list[str]) -> Measurement | None:
    model = _resolve_model(record.get("model", ""), folder, models_root)
    label = normal_label(record["label"]) if record.get("label") else label_of(record)
    default = "mcudeploy" if label.startswith("mcudeploy") else "cmsis-nn"   # our own code, else the library class
    profile = (record.get("runtime") or default).strip()
    latency = _latency(record.get("latency_ms"), line, source)
    clock_hz = _clock(record, line, problems)
    board = _board(record, line, clock_hz or 0.0, problems) if clock_hz is not None else None
    if model is None:
        problems.append(f"line {line}: model {record.get('model')!r} not found (relative to {folder}"
                        + (f" or {models_root}" if models_root else "") + ")")
    if profile not in runtime_profiles():
        problems.append(f"line {line}: runtime {profile!r} is not one of {', '.join(runtime_profiles())}")
    if model is None or board is None or clock_hz is None or profile not in runtime_profiles():
        return None
    return Measurement(line, model, board[0], board[1], clock_hz, label, profile, latency, family=board[2])


def read_rows(path: Path, models_root: Path | None = None) -> list[Measurement]:
    """The rows of a measured-latency CSV, every problem named (module docstring)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            records = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise UsageError(f"--calibrate {path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise UsageError(f"--calibrate {path}: not a readable CSV file ({err})") from None
    columns = set(records[0]) if records else set()
    missing = [c for c in REQUIRED if c not in columns] + ([] if {"soc", "target", "board"} & columns
                                                           else ["soc, board or target"])
    if missing or not records:
        raise UsageError(f"--calibrate {path}: missing column(s) {', '.join(missing) or '(no rows)'}; expected "
                         "model, soc / board (+ core) or target, cpu_mhz, framework, latency_ms")
    problems: list[str] = []
    rows = [row for line, record in enumerate(records, start=2)
            if (row := _row(record, line, str(path), path.parent, models_root, problems)) is not None]
    if problems:
        grouped = grouped_problems(problems)
        raise UsageError(f"--calibrate {path}: {len(problems)} row(s) cannot be used: " + "; ".join(grouped[:12])
                         + (" ..." if len(grouped) > 12 else ""))
    if len(rows) < MINIMUM_ROWS:
        raise UsageError(f"--calibrate {path}: {len(rows)} measurement(s); a fit needs at least {MINIMUM_ROWS} "
                         "(better: several models on each board) to say anything about the constants")
    return rows


def grouped_problems(problems: list[str]) -> list[str]:
    """``line N: message`` entries with the same message said once: ``lines 2, 3: message``."""
    lines: dict[str, list[str]] = {}
    for problem in problems:
        line, _, message = problem.partition(": ")
        lines.setdefault(message, []).append(line.removeprefix("line "))
    return [f"line{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}: {message}" for message, numbers in lines.items()]


def measure_rows(rows: list[Measurement], deploy_function) -> None:
    """Fill each row's parts ``C_g``, ``R``, ``B``, ``M``, ``N`` (:mod:`.latency_fit`) from the prior
    estimate (no calibration). ``deploy_function(model, target) -> Deployment`` (cached by the caller)."""
    for row in rows:
        deployment = deploy_function(row.model, row.target)
        result = estimate(deployment, runtime=row.profile, core_clock_hz=row.clock_hz or None, defaults=False)
        clock = result.core_clock_hz
        row.clock_hz = clock
        row.family = row.family or core_model(deployment.target.core).family
        classes = runtime_profiles()[row.profile].kernel_classes
        row.parts = {REST: result.overhead_us * 1e-6 * clock}
        cpu = [layer for layer in result.layers if layer.device == "cpu" and layer.known]
        for layer in cpu:
            group = classes.get(layer.kernel.removesuffix("_s16"), REST)
            row.parts[group] = row.parts.get(group, 0.0) + layer.compute_cycles + layer.overhead_cycles
        row.flash_bytes = float(sum(layer.flash_weight_bytes for layer in cpu)) * clock / deployment.target.core.clock_hz
        row.waits = sum(layer.memory_cycles for layer in cpu)
        row.npu_us = sum(layer.time_us for layer in result.layers if layer.device == "npu")


def _framework_scales(rows: list[Measurement], scales: dict[str, float]) -> dict[str, float]:
    """Geometric mean scale of each framework over its labels' rows."""
    logs: dict[str, list[float]] = {}
    for row in rows:
        logs.setdefault(framework_of(row.label), []).append(math.log(scales[row.label]))
    return {framework: math.exp(sum(values) / len(values)) for framework, values in logs.items()
            if framework and framework not in scales}


def overlay_of(model: FittedModel, rows: list[Measurement], source: str) -> Overlay:
    """The overlay that makes :func:`.estimator.estimate` apply ``model`` (module docstring)."""
    overlay = Overlay(source or "calibration")
    for family in sorted({row.family for row in rows}):
        prior = core_models()[family]
        overlay.cpi[family] = {name: prior.cpi[name] * model.cores[family] for name in CODE_CLASSES}
    profile_of = {row.label: row.profile for row in rows}
    overlay.runtimes = {label: (profile_of[label], scale) for label, scale in model.labels.items()}
    if "cmsis-nn" in profile_of.values() and "cmsis-nn" not in overlay.runtimes:   # a library of the class, unmeasured
        overlay.runtimes["cmsis-nn"] = ("cmsis-nn", model.generic_scale)
    for framework, scale in _framework_scales(rows, model.labels).items():
        overlay.runtimes[framework] = (profile_of[next(r.label for r in rows if framework_of(r.label) == framework)], scale)
    for (framework, group), value in model.classes.items():
        overlay.class_scales.setdefault(framework, {})[group] = value
    overlay.flash_cycles_per_byte = model.flash_cycles_per_byte
    return overlay


def fitted_lines(model: FittedModel, rows: list[Measurement]) -> list[str]:
    """What the fit set, in words (``--calibrate`` prints them)."""
    lines = []
    for family, factor in sorted(model.cores.items()):
        prior = core_models()[family].cpi
        count = sum(1 for row in rows if row.family == family)
        lines.append(f"core {family}: CPI x{factor:.3f} of the prior (dsp {prior['dsp'] * factor:.3f}, scalar "
                     f"{prior['scalar'] * factor:.3f}; {count} rows)")
    for label, scale in sorted(model.labels.items()):
        lines.append(f"runtime {label!r}: x{scale:.3f} of its profile ({sum(1 for r in rows if r.label == label)} rows)")
    for (framework, group), value in sorted(model.classes.items()):
        lines.append(f"framework {framework!r} {group} layers: x{value:.3f}")
    lines.append(f"flash: {model.flash_cycles_per_byte:.3f} cycles per weight byte not hidden by prefetch")
    return lines


def shipped_model() -> FittedModel | None:
    """The shipped defaults as a :class:`FittedModel` (factors relative to ``data/cores.toml``), or None."""
    shipped = shipped_overlay()
    if shipped is None:
        return None
    cores = {family: cpi["dsp"] / core_models()[family].cpi["dsp"] for family, cpi in shipped.cpi.items() if "dsp" in cpi}
    classes = {(framework, group): value for framework, groups in shipped.class_scales.items()
               for group, value in groups.items()}
    return FittedModel(cores, {label: scale for label, (_, scale) in shipped.runtimes.items()}, classes,
                       shipped.flash_cycles_per_byte or 1.0)


def calibrate(rows: list[Measurement], deploy_function, source: str = "", from_defaults: bool = True) -> Calibration:
    """Fit the overlay to ``rows`` (module docstring): with ``from_defaults`` the priors are centred
    on the shipped defaults (a board's few rows refine the public fit), else on Arm's figures."""
    measure_rows(rows, deploy_function)
    model = fit(rows, start=shipped_model() if from_defaults else None)
    for row in rows:
        row.predicted_ms = float(model.predict(row))
    overlay = overlay_of(model, rows, source)
    errors = [abs(row.predicted_ms / row.measured_ms - 1) for row in rows]
    overlay.header = "\n".join([f"mcudeploy estimate --calibrate {source}: {len(rows)} rows, "
                                f"{datetime.now(timezone.utc).strftime('%Y-%m-%d')}",
                                f"fit error: median {np.median(errors):.1%}, worst {max(errors):.1%} "
                                "(on the rows it was fitted to)", *fitted_lines(model, rows)])
    return Calibration(overlay, rows, model, dict(model.cores), dict(model.labels))

