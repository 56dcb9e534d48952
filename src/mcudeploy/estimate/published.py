"""The public board measurements the shipped defaults are fitted on, read as :class:`Measurement` rows.

    published_rows(csv_path, models_root) -> [Measurement]

Input: a CSV of published latencies in the columns of
``published_latency/mlperf_tiny_stm32.csv`` (``system``, ``soc``, ``cpu_mhz``, ``framework``,
``model``, ``latency_ms``; optional ``core`` for a board that is no built-in target, and
``source``). Every row is kept except those whose board is neither a built-in target nor has a
``core`` column (named in the log). The runtime label is the framework and its version
(:func:`.overlay.normal_label`), with two refinements where the framework column hides two
different code paths: microTVM with CMSIS-NN kernels (``CMSIS`` in the system name) or with
TVM's own (``microtvm native``), and builds tuned for speed (``max_performance`` in the system
name: its own label). Every row runs the ``cmsis-nn`` profile (the CMSIS-NN-class instruction
model; each label's scale says how that library differs).
"""
from __future__ import annotations

import csv
import logging
from pathlib import Path

from .calibrate import PROXY_TARGETS, _family, target_for
from .latency_fit import Measurement
from .overlay import normal_label

log = logging.getLogger(__name__)


SHORT_NAMES = {"bosch hardware-aware lowering engine (hale) version": "bosch hale",
               "plumerai inference engine": "plumerai"}


def label_of(record: dict) -> str:
    framework, system = record.get("framework", ""), record.get("system", "").upper()
    label = normal_label(framework)
    for long, short in SHORT_NAMES.items():
        label = label.replace(long, short)
    if label == "microtvm":
        label = "microtvm cmsis-nn" if "CMSIS" in system else "microtvm native"
    if "MAX_PERFORMANCE" in system:      # "bosch hale 1.0.175" -> "bosch hale max-performance 1.0.175"
        name, _, version = label.rpartition(" ")
        label = f"{name} max-performance {version}"
    return label


def _board(record: dict) -> tuple[str, str, str] | None:
    target = target_for(record.get("soc", ""))
    if target is not None:
        return target, target, ""
    family = _family(record.get("core", "")) if record.get("core") else None
    if family in PROXY_TARGETS:
        return record.get("system") or record.get("soc", ""), PROXY_TARGETS[family], family
    return None


def published_rows(csv_path: Path, models_root: Path) -> list[Measurement]:
    """The usable rows of ``csv_path`` (module docstring); model paths relative to ``models_root``."""
    rows = []
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for line, record in enumerate(csv.DictReader(handle), start=2):
            board = _board(record)
            model = models_root / record["model"]
            if board is None or not model.is_file():
                log.info("%s line %d: left out (board %r: no built-in target and no core column, or model "
                         "missing)", csv_path.name, line, record.get("soc"))
                continue
            rows.append(Measurement(line, model, board[0], board[1], float(record["cpu_mhz"]) * 1e6,
                                    label_of(record), "cmsis-nn", float(record["latency_ms"]), family=board[2]))
    return rows
