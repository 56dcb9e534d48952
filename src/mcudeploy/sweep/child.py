"""The cell process: ``python -m mcudeploy.sweep.child``, one per worker thread, reused cell after cell.

Protocol (JSON, one object per line): the process writes ``{"ready": true, "pid": ...,
"version": ...}`` once its imports are done, then for every request line read from standard
input, ``{"request": ..., "paths": {role: file}}``, one result line
(:func:`.cell_runner.run_cell`). End of input ends it. The protocol has standard output to
itself: file descriptor 1 is pointed at standard error before anything runs, so a library
or plugin that prints cannot corrupt a result. Logging below ERROR goes nowhere (the cell's
warnings travel in its result); recording is off (the client records).

Running each cell in this process is what makes a timeout real: the worker kills the
process (:mod:`.cell_process`), which no thread could do to itself.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path


def _protocol_stream():
    """A private copy of standard output for the protocol; fd 1 then writes to stderr."""
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return stream


def main() -> int:
    protocol = _protocol_stream()
    errors = logging.StreamHandler()      # warnings are captured per cell, not printed
    errors.setLevel(logging.ERROR)
    errors.setFormatter(logging.Formatter("mcudeploy cell process: %(levelname)s: %(message)s"))
    logging.getLogger().addHandler(errors)
    logging.getLogger("mcudeploy").setLevel(logging.WARNING)
    from .. import __version__
    from .cell_runner import run_cell  # the pipeline's imports, once

    protocol.write(json.dumps({"ready": True, "pid": os.getpid(), "version": __version__}) + "\n")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            paths = {role: Path(path) for role, path in message["paths"].items()}
            result = run_cell(message["request"], paths)
            protocol.write(json.dumps(result, default=str) + "\n")
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
