"""The run store's SQLite schema, its version and the migration hook.

A store is an SQLite file whose ``PRAGMA application_id`` is :data:`APPLICATION_ID`
("MCUD") and whose ``PRAGMA user_version`` is the schema version. :func:`prepare` creates
the schema in a new (absent or 0-byte) file, migrates an older store step by step with
:data:`MIGRATIONS` (``{version v: function upgrading v -> v + 1}``), and refuses anything
else - another application's database, a newer store, a file that is not SQLite - with a
:class:`RunStoreError`; it never rewrites such a file.

Tables (schema version 1)::

    runs       one row per command run: id, command, command_line, argv_json, stage,
               started_at / finished_at (ISO 8601 UTC), status (ok | failed | incomplete),
               exit_code, config_json, config_hash, model_path, model_sha256, tool_version,
               target, git_commit, working_dir, process_id
    figures    (run_id, name) -> value (REAL): arena_bytes, flash_bytes, cosine, ...
    messages   (run_id, kind = warning | error, text), in the order they happened
    artefacts  (run_id, path) -> sha256, size: the files the run wrote
    tags       (run_id, name) -> value: free labels, e.g. sweep=alpha
    payloads   run_id -> zlib-compressed JSON (see :mod:`.payload` for its schema)
    file_hashes  path -> size, mtime_ns, sha256: a cache, so a big model is hashed once
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable

from ..errors import UsageError

SCHEMA_VERSION = 1
APPLICATION_ID = 0x4D435544   # "MCUD"

SCHEMA_V1 = """
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    command       TEXT NOT NULL,
    command_line  TEXT NOT NULL,
    argv_json     TEXT NOT NULL,
    stage         TEXT,
    started_at    TEXT NOT NULL,
    finished_at   TEXT,
    status        TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'incomplete')),
    exit_code     INTEGER,
    config_json   TEXT NOT NULL,
    config_hash   TEXT NOT NULL,
    model_path    TEXT,
    model_sha256  TEXT,
    tool_version  TEXT NOT NULL,
    target        TEXT,
    git_commit    TEXT,
    working_dir   TEXT,
    process_id    INTEGER
);
CREATE INDEX runs_by_start ON runs (started_at);
CREATE TABLE figures (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    value  REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE messages (
    id     INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind   TEXT NOT NULL CHECK (kind IN ('warning', 'error')),
    text   TEXT NOT NULL
);
CREATE INDEX messages_by_run ON messages (run_id);
CREATE TABLE artefacts (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    path   TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size   INTEGER NOT NULL,
    PRIMARY KEY (run_id, path)
);
CREATE TABLE tags (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    value  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, name)
);
CREATE TABLE payloads (
    run_id   INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    encoding TEXT NOT NULL,
    data     BLOB NOT NULL
);
CREATE TABLE file_hashes (
    path     TEXT PRIMARY KEY,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256   TEXT NOT NULL
);
"""

# {from_version: upgrade to from_version + 1}; each runs inside one write transaction.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}


class RunStoreError(UsageError):
    """The run store cannot be used: not a store, corrupt, locked, or from a newer mcudeploy.
    The message names the file and what to do (a usage problem: exit code 2)."""


def prepare(connection: sqlite3.Connection, path: Path) -> None:
    """Create, check or migrate the schema of the store at ``path`` (module docstring)."""
    application_id, version = _identity(connection, path)
    if application_id == APPLICATION_ID and version == SCHEMA_VERSION:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        application_id, version = _identity(connection, path)   # another process may have won
        if application_id == 0 and version == 0 and not _has_tables(connection):
            for statement in _statements(SCHEMA_V1):   # not executescript: it would COMMIT midway
                connection.execute(statement)
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            version = SCHEMA_VERSION
        elif application_id != APPLICATION_ID:
            raise RunStoreError(f"{path} is an SQLite database of another application (application_id "
                                f"{application_id:#x}), not an mcudeploy run store; it was left untouched. "
                                "Give another file with --runs FILE.")
        _migrate(connection, path, version)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _identity(connection: sqlite3.Connection, path: Path) -> tuple[int, int]:
    application_id = connection.execute("PRAGMA application_id").fetchone()[0]
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    return int(application_id), int(version)


def _has_tables(connection: sqlite3.Connection) -> bool:
    return connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def _migrate(connection: sqlite3.Connection, path: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise RunStoreError(f"{path} was written by a newer mcudeploy (store schema {version}, this "
                            f"version reads up to {SCHEMA_VERSION}); upgrade mcudeploy or give "
                            "another file with --runs FILE.")
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise RunStoreError(f"{path}: no migration from store schema {version}; it was left "
                                "untouched. Give another file with --runs FILE.")
        MIGRATIONS[version](connection)
        version += 1
