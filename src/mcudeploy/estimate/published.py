"""The public board measurements the shipped defaults are fitted on, read as :class:`Measurement` rows.

    published_rows(csv_path, models_root) -> [Measurement]

Input: a CSV of published latencies in the columns of
``published_latency/mlperf_tiny_stm32.csv`` (``system``, ``soc``, ``cpu_mhz``, ``framework``,
``model``, ``latency_ms``; optional ``core`` for a board that is no built-in target, and
``source``; lines starting with ``#`` at the top are notes). Every row is kept but those of a runtime that does not run on the CPU
(:data:`NOT_CPU`, with the reason); a board that is no built-in target runs on the memories of a
target of its core (the ``core`` column, else its STM32 series: ``calibrate.STM32_SERIES_CORES``). The runtime label is the framework and its version
(:func:`.overlay.normal_label`), with two refinements where the framework column hides two
different code paths: microTVM with CMSIS-NN kernels (``CMSIS`` in the system name) or with
TVM's own (``microtvm native``), and builds tuned for speed (``max_performance`` in the system
name: its own label). Every row runs the ``cmsis-nn`` profile (the CMSIS-NN-class instruction
model; each label's scale says how that library differs).
"""
from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

from .calibrate import label_of, proxy_target, series_core, target_for
from .latency_fit import Measurement

log = logging.getLogger(__name__)
# runtime labels whose rows a CPU cost model cannot hold, and why (left out of the fit, logged)
NOT_CPU = {"stedge-ai internal version": (
    "STM32U3C5 rows: ResNet-8 in 50 ms at 96 MHz is 2.6 MACs per cycle, above the 2 per cycle a "
    "Cortex-M33's SMLAD peaks at without a single load; the U3C5's HSP accelerator runs them (ST Edge "
    "AI --hsp, https://shequ.stmicroelectronics.cn/thread-870984-1-1.html)")}


def _board(record: dict) -> tuple[str, str, str] | None:
    target = target_for(record.get("soc", ""))
    if target is not None:
        return target, target, ""
    core = record.get("core") or series_core(record.get("soc", ""))
    proxy = proxy_target(record.get("soc", ""), core) if core else None
    if proxy is None:
        return None
    return record.get("system") or record.get("soc", ""), proxy[0], proxy[1]


def published_rows(csv_path: Path, models_root: Path) -> list[Measurement]:
    """The usable rows of ``csv_path`` (module docstring); model paths relative to ``models_root``."""
    rows = []
    text = csv_path.read_text(encoding="utf-8").splitlines()
    comments = sum(1 for line in text if line.startswith("#"))      # a header of notes and sources
    with io.StringIO("\n".join(line for line in text if not line.startswith("#"))) as handle:
        for line, record in enumerate(csv.DictReader(handle), start=2 + comments):
            label = label_of(record)
            if label in NOT_CPU:
                log.info("%s line %d: left out: %s", csv_path.name, line, NOT_CPU[label])
                continue
            board = _board(record)
            model = models_root / record["model"]
            if board is None or not model.is_file():
                log.info("%s line %d: left out (board %r: no built-in target and no core column, or model "
                         "missing)", csv_path.name, line, record.get("soc"))
                continue
            rows.append(Measurement(line, model, board[0], board[1], float(record["cpu_mhz"]) * 1e6,
                                    label, "cmsis-nn", float(record["latency_ms"]), family=board[2]))
    return rows
