"""One cell, start to end, inside the cell process: the stages in order, recorded in memory.

    result = run_cell(request, paths)      # request: Cell.request(); paths: role -> local file

The cell's stages run inside an in-memory :class:`~mcudeploy.runs.live.Run` made the
:func:`~mcudeploy.runs.current.current_run`, so every figure, payload section and
``mcudeploy.*`` warning the library records lands in it; the client writes that run to the
store (:mod:`.recording`). The result is plain JSON::

    {"status": "ok" | "failed", "exit_code": int, "error": str | None, "stage": failing stage,
     "figures": {name: number}, "warnings": [str], "payload": {...}, "seconds": float}

A user error (:class:`~mcudeploy.errors.McuDeployError`) fails the cell with its exit code;
anything else is a bug of mcudeploy or of a plugin: exit code 1 and the exception's text.
"""
from __future__ import annotations

import logging
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import McuDeployError
from ..runs.current import active_run
from ..runs.live import Run, begin_record
from ..runs.log_capture import capturing
from ..runs.payload import clean
from .catalogue import is_plugin
from .context import CellContext
from .sources import resolve_callable
from .stages import STAGES, check_metrics

log = logging.getLogger(__name__)
STATUS_OK, STATUS_FAILED, STATUS_TIMEOUT = "ok", "failed", "timeout"


def _plugin(name: str, context: CellContext) -> dict[str, Any]:
    reference = context.settings("plugins").get(name, name)
    file = context.paths.get(f"plugin:{name}") if reference.startswith("file:") else None
    function = resolve_callable(name, Path(file) if file else None, f"stage {name}:")
    return check_metrics(name, function(context))


def _run_stages(context: CellContext, result: dict[str, Any]) -> None:
    for name in context.request["stages"]:
        result["stage"] = name
        metrics = _plugin(name, context) if is_plugin(name) else STAGES[name](context)
        context.metrics.update({key: value for key, value in metrics.items() if value is not None})
    result["stage"] = None


def run_cell(request: dict[str, Any], paths: dict[str, Path]) -> dict[str, Any]:
    """Run the cell ``request`` describes (module docstring)."""
    started = time.perf_counter()
    run = Run(begin_record("sweep-cell", []))
    context = CellContext(request, paths)
    result: dict[str, Any] = {"status": STATUS_OK, "exit_code": 0, "error": None, "stage": None}
    try:
        with capturing(run), active_run(run):
            _run_stages(context, result)
    except McuDeployError as error:
        result.update(status=STATUS_FAILED, exit_code=error.exit_code, error=f"{result['stage']}: {error}")
    except Exception as bug:      # a bug of mcudeploy or of a plugin stage: recorded, the sweep goes on
        log.debug("cell %s failed:\n%s", request.get("index"), traceback.format_exc())
        result.update(status=STATUS_FAILED, exit_code=1, error=f"{result['stage']}: {type(bug).__name__}: {bug}")
    run.figures(context.metrics)
    result.update(figures=dict(run.record.figures), warnings=list(dict.fromkeys(run.record.warnings)),
                  payload=clean(run.record.payload) if run.record.payload else None,
                  seconds=time.perf_counter() - started)
    return result
