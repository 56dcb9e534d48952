"""The trial log: one human line and one JSON line per trial, written as the search runs.

Input: trials as they finish, free-text notes (pruning, bisection, fixes). Output: a text
file (``--log FILE``) in the form compiler logs use, and JSON lines beside it
(``FILE.jsonl``)::

    Trial 23: config { schedule: file, alignment: 8 } - FAIL (RAM_NOFIT: SRAM overflow in cpuRAM2:
        estimated 421888 B (412KB), available 393216 B (384KB); peak at step 22 (concat_60): ...)
    Trial 24: config { ... } - PASS (latency 52.31 ms, on-chip 371KB, external 0B, flash 1.2MB) [3.2 s]
    # pruned: ... (a note)

Both files go through the output guard (:func:`check_log_paths`, called by the CLI before
any work and again here): the sidecar ``FILE.jsonl`` is checked like ``FILE`` (never a
device, never a file the search reads), and an existing one is replaced only when it is a
trial log's JSON lines (empty, or its first line a JSON object), never a user file.
A trial that ran ends with what it cost, ``[seconds]`` (a pruned SKIP costs nothing); the
search's closing note gives the median and worst (:func:`cost_note`).

Each line is flushed when written, so the log of a search that stops on an error (or is
interrupted) keeps every trial run so far. The config shows the knobs the search varies
that differ from trial 0, the base, (and any constraint a trial changes, e.g. a bisection's
``sram_limit``); the JSON line has the whole configuration.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import IO, AbstractSet, Any

from ..safe_io import check_output_path, check_sidecar_path
from .reasons import kib
from .space import describe_value

logger = logging.getLogger(__name__)


def json_path_for(path: Path) -> Path:
    return path.with_name(path.name + ".jsonl")


def is_json_log(path: Path) -> bool:
    """Whether ``path`` is a trial log's JSON lines: empty, or its first line a JSON object."""
    try:
        with open(path, "rb") as stream:
            first = stream.readline(1 << 20)
        return not first.strip() or isinstance(json.loads(first), dict)
    except (OSError, ValueError, RecursionError):
        return False


def check_log_paths(path: str | Path, inputs=()) -> tuple[Path, Path]:
    """``--log FILE`` and its sidecar ``FILE.jsonl``, checked (module docstring)."""
    text = check_output_path(path, "--log", inputs=inputs)
    sidecar = check_sidecar_path(json_path_for(text), "--log (its sidecar FILE.jsonl)", belongs=is_json_log,
                                 inputs=inputs)
    return text, sidecar


def config_text(config: dict[str, Any], shown: list[str], knobs: AbstractSet[str] = frozenset(),
                base: dict[str, Any] | None = None) -> str:
    """The ``shown`` knobs of ``config`` that differ from ``base`` (all of them without a base)
    and every key that is not a knob (a constraint a trial changes, e.g. ``sram_limit``)."""
    keys = [k for k in shown if k in config and (base is None or base.get(k) != config[k])]
    keys += [k for k in config if k in knobs and k not in shown and base is not None and base.get(k) != config[k]]
    keys += sorted(k for k in config if k not in shown and k not in knobs)
    if not keys:
        return "{ defaults }" if base is not None else "{ }"
    return "{ " + ", ".join(f"{k}: {describe_value(config[k])}" for k in keys) + " }"


def outcome_text(trial) -> str:
    if trial.status == "PASS":
        metrics = trial.metrics
        latency = "latency unknown" if metrics.latency_us is None else f"latency {metrics.latency_us / 1000:.3f} ms"
        parts = [latency, f"on-chip {kib(metrics.on_chip_bytes)}", f"external {kib(metrics.external_bytes)}",
                 f"flash {kib(metrics.flash_bytes)}"]
        parts += [f"{key} {value}" for key, value in sorted(metrics.extra.items()) if key in _SHOWN_EXTRA]
        return "PASS (" + ", ".join(parts) + ")"
    return f"{trial.status} (" + "; ".join(f"{r.code}: {r.message}" for r in trial.reasons) + ")"


def cost_note(trials) -> str | None:
    """``trials: N run, median S s, worst S s (trial K), total S s`` of the trials that ran."""
    ran = [t for t in trials if t.status != "SKIP"]
    if not ran:
        return None
    seconds = sorted(t.seconds for t in ran)
    middle = len(seconds) // 2
    median = seconds[middle] if len(seconds) % 2 else (seconds[middle - 1] + seconds[middle]) / 2
    worst = max(ran, key=lambda t: t.seconds)
    return (f"trial cost: {len(ran)} run, median {median:.1f} s, worst {worst.seconds:.1f} s "
            f"(trial {worst.index}), total {sum(seconds):.1f} s")


_SHOWN_EXTRA = ("vela_cycles", "vela_sram_bytes", "npu_operators", "cpu_operators")


class TrialLog:
    """The two log files (module docstring); either may be None (nothing written)."""

    def __init__(self, path: str | Path | None, shown: list[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.shown = list(shown or [])
        self.knobs: set[str] = set()
        self.base: dict[str, Any] | None = None      # configs are shown as changes from it
        self._text: IO[str] | None = None
        self._json: IO[str] | None = None
        if self.path is not None:
            text, sidecar = check_log_paths(self.path)
            self._text = text.open("w", encoding="utf-8")
            self._json = sidecar.open("w", encoding="utf-8")

    def set_shown(self, shown: list[str], knobs: set[str], base: dict[str, Any] | None = None) -> None:
        """Show the knobs ``shown`` (the ones varied) as changes from ``base`` (trial 0)."""
        self.shown, self.knobs, self.base = list(shown), set(knobs), base

    def _write(self, stream: IO[str] | None, line: str) -> None:
        if stream is not None:
            stream.write(line + "\n")
            stream.flush()

    def note(self, text: str, data: dict | None = None) -> None:
        for line in text.splitlines() or [""]:
            self._write(self._text, f"# {line}")
        if data is not None:
            self._write(self._json, json.dumps({"note": text, **data}, default=str))
        logger.info("%s", text)

    def trial_line(self, trial) -> str:
        label = f" [{trial.label}]" if trial.label else ""
        number = "-" if trial.index < 0 else str(trial.index)
        cost = "" if trial.status == "SKIP" else f" [{trial.seconds:.1f} s]"
        return (f"Trial {number}{label}: config {config_text(trial.config, self.shown, self.knobs, self.base)} - "
                f"{outcome_text(trial)}{cost}")

    def trial(self, trial) -> str:
        line = self.trial_line(trial)
        self._write(self._text, line)
        self._write(self._json, json.dumps(trial.to_json(), default=str))
        for note in trial.notes:
            logger.debug("trial %s: %s", trial.index, note)
        return line

    def close(self) -> None:
        for stream in (self._text, self._json):
            if stream is not None:
                stream.close()
        self._text = self._json = None
