"""The run store's SQLite schema, its version and the migration hook.

A store is an SQLite file whose ``PRAGMA application_id`` is :data:`APPLICATION_ID`
("MCUD") and whose ``PRAGMA user_version`` is the schema version. A new store is made whole
in a temporary file of the same folder and then linked to its name (:func:`create_store`:
``os.link`` fails when the name exists, so two processes creating the store at once both
end up with the one that won), so an existing file is never turned into a store: before
SQLite opens it, :func:`check_store_path` refuses a name no file system takes, a folder and a
device or pipe (SQLite would create ``/dev/null-journal`` beside it), and
:func:`check_store_header` a file that is empty or shorter than SQLite's 100-byte header (a
longer file that is not SQLite fails SQLite's first read, and is left untouched). :func:`prepare` then migrates an older store step by step with
:data:`MIGRATIONS` (``{version v: function upgrading v -> v + 1}``), and refuses anything
else - another application's database (also an empty one: application id 0), a newer
store - with a :class:`RunStoreError`; it never rewrites such a file.

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

import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Callable

from ..errors import UsageError
from ..safe_io import check_path_name, default_file_mode

SCHEMA_VERSION = 1
APPLICATION_ID = 0x4D435544   # "MCUD"
HEADER_BYTES = 100             # an SQLite file is at least its header
ELSEWHERE = "give another file with --runs FILE"

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


def check_store_path(path: str | Path) -> Path:
    """``path`` as a store may live there (module docstring), else :class:`RunStoreError`."""
    try:
        path = check_path_name(path, "--runs")
    except UsageError as error:
        raise RunStoreError(str(error)) from None
    if path.is_dir():
        raise RunStoreError(f"{path} is a folder; give the run store's file, e.g. {path / 'runs.sqlite'}")
    if path.exists() and not path.is_file():
        raise RunStoreError(f"{path} is a device or a pipe, not a run store file; it was left untouched. "
                            f"{ELSEWHERE[0].upper()}{ELSEWHERE[1:]}")
    return path


def check_store_header(path: Path) -> None:
    """:class:`RunStoreError` for a file too short to be SQLite (module docstring). Only its
    size is read: opening and closing the file itself would drop every POSIX lock this
    process's SQLite connections hold on it (a file that is long enough but not SQLite is
    refused by SQLite's first read, :meth:`~.store.RunStore._guard`)."""
    try:
        size = os.stat(path).st_size
    except OSError as error:
        raise RunStoreError(f"cannot read the run store {path} ({error.strerror or error}); {ELSEWHERE}") from None
    if size < HEADER_BYTES:
        what = "the file is empty" if not size else f"{size} byte(s), shorter than SQLite's header"
        raise RunStoreError(f"{path} is not a readable run store ({what}); it was left untouched. Move it away "
                            f"(mcudeploy then starts a new store there) or {ELSEWHERE}")


def create_store(path: Path, timeout: float) -> None:
    """A new, complete store at ``path`` (made in a temporary file, then linked: module
    docstring); nothing when another process made it first."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
        os.close(descriptor)
        os.chmod(temporary, default_file_mode())   # as SQLite would create it, not mkstemp's 0600
    except OSError as error:
        raise RunStoreError(f"cannot create the run store {path}: {error.strerror or error}; check the folder "
                            f"is writable or {ELSEWHERE}") from None
    try:
        connection = sqlite3.connect(temporary, timeout=timeout, isolation_level=None)
        try:
            _create_schema(connection)
            connection.execute("PRAGMA journal_mode = WAL")
        finally:
            connection.close()
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass                     # another process won: its store is the store
        except OSError:              # a file system without hard links: rename, if still free
            if not os.path.lexists(path):
                os.replace(temporary, path)
    except (OSError, sqlite3.Error) as error:
        raise RunStoreError(f"cannot create the run store {path}: {error}; check the folder is writable "
                            f"or {ELSEWHERE}") from None
    finally:
        for leftover in (temporary, temporary + "-wal", temporary + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass


def _create_schema(connection: sqlite3.Connection) -> None:
    connection.execute("BEGIN IMMEDIATE")
    for statement in _statements(SCHEMA_V1):   # not executescript: it would COMMIT midway
        connection.execute(statement)
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    connection.execute("COMMIT")


def prepare(connection: sqlite3.Connection, path: Path) -> None:
    """Check or migrate the schema of the store at ``path`` (module docstring)."""
    application_id, version = _identity(connection, path)
    if application_id == APPLICATION_ID and version == SCHEMA_VERSION:
        return
    if application_id != APPLICATION_ID:
        what = "an empty SQLite database" if application_id == 0 and not _has_tables(connection) else \
            f"an SQLite database of another application (application_id {application_id:#x})"
        raise RunStoreError(f"{path} is {what}, not an mcudeploy run store; it was left untouched. "
                            f"{ELSEWHERE[0].upper()}{ELSEWHERE[1:]}.")
    connection.execute("BEGIN IMMEDIATE")
    try:
        _, version = _identity(connection, path)   # another process may have migrated it
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
