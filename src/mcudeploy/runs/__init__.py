"""Run records: every command that computes something is recorded in an SQLite store.

Public names: :class:`RunStore` (open, record, get, list_runs, resolve), :class:`Run` (the
live handle: figure, artefact, warn, tag, payload_section), :class:`RunRecord` (a run as
read back), :func:`current_run` / :func:`active_run` (:mod:`.current`),
:func:`default_store_path` (:mod:`.location`) and :class:`RunStoreError`. The schema is in
:mod:`.schema`, the payload's in :mod:`.payload`, what each command records in :mod:`.capture`;
the CLI hook that records every command is :mod:`mcudeploy.cli.recording`.
"""
from importlib import import_module
from typing import Any

# name -> submodule; imported on first use, so that the CLI's start-up (which imports the
# recording hook) does not load SQLite for `mcudeploy --help`
_EXPORTS = {"NULL_RUN": "live", "Run": "live", "default_store_path": "location", "STATUSES": "records",
            "Artefact": "records", "RunRecord": "records", "current_run": "current",
            "active_run": "current", "SCHEMA_VERSION": "schema", "RunStoreError": "schema",
            "RunStore": "store"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
