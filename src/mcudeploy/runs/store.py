"""The run store: an embedded SQLite database of every recorded run.

    store = RunStore.open(".mcudeploy/runs.sqlite")
    with store.record("plan", sys.argv[1:], config={...}, model=path, target="stm32h743") as run:
        run.figure("arena_bytes", 33312)
        run.artefact("plan.json")
        run.warn("...")
    store.get("last"), store.list_runs(limit=20), store.resolve("-2")

Concurrency: WAL journal (readers never block the one writer), a busy timeout of
:data:`BUSY_TIMEOUT_S`, and two short write transactions per run - the row is inserted
(status ``incomplete``) when the run begins and completed when it ends, so a process that
dies midway leaves an ``incomplete`` run, never a lost or half-written one. Every SQLite
failure becomes a one-line :class:`~.schema.RunStoreError` naming the file and what to do;
a file that is not a store is never written (:mod:`.schema`).

Durability: ``PRAGMA synchronous = OFF``. A process that dies (a crash, ``kill -9``) loses
nothing it committed and damages nothing - SQLite's journal guarantees that without any
fsync; only an operating-system crash or a power cut within seconds of a write may lose the
last runs or, rarely, damage the file, which the store then reports (and never overwrites).
Each fsync costs 3-10 ms on a busy disk and a command needs three (WAL header, checkpoint
at close), which alone would exceed recording's budget of 20 ms per command.
"""
from __future__ import annotations

import json
import os
import sqlite3
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import UsageError
from .ids import clamp_limit, parse_reference
from .live import Run, begin_record
from .location import git_commit
from .records import Artefact, RunRecord, sha256_of_file
from .schema import RunStoreError, check_store_header, check_store_path, create_store, prepare

BUSY_TIMEOUT_S = 5.0
PAYLOAD_ENCODING = "json+zlib"
RUN_COLUMNS = ("id", "command", "command_line", "argv_json", "stage", "started_at", "finished_at",
               "status", "exit_code", "config_json", "config_hash", "model_path", "model_sha256",
               "tool_version", "target", "git_commit", "working_dir")


class RunStore:
    """One open store (one SQLite connection). Use :meth:`open`; close with :meth:`close`."""

    def __init__(self, path: Path, connection: sqlite3.Connection, timeout: float = BUSY_TIMEOUT_S):
        self.path = path
        self.timeout = timeout
        self._connection = connection

    @classmethod
    def open(cls, path: str | Path, *, timeout: float = BUSY_TIMEOUT_S, create: bool = True) -> "RunStore":
        """Open the store at ``path``; with ``create`` a missing one is made (its folder too),
        otherwise it is an error (read-only commands never make a store). A file that is not
        a store - empty, too short, not SQLite, another program's database, a device - is
        refused and never written (:mod:`.schema`). ``timeout``: seconds to wait for
        another process's write to finish."""
        path = check_store_path(path)
        if not path.exists():
            if not create:
                raise RunStoreError(f"no run store at {path}: nothing has been recorded there yet (give the "
                                    "store with --runs DB, or run a command such as 'mcudeploy plan' first)")
            create_store(path, timeout)
        check_store_header(path)
        try:
            connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as error:
            raise RunStoreError(f"cannot open the run store {path}: {error}; check the folder is "
                                "writable or give another file with --runs FILE") from None
        store = cls(path, connection, timeout)
        try:
            with store._guard():
                connection.execute("PRAGMA foreign_keys = ON")
                prepare(connection, path)
                if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("PRAGMA synchronous = OFF")   # see "Durability" above
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite errors -> one-line :class:`RunStoreError` naming the file and the remedy."""
        try:
            yield
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise   # a bug in mcudeploy, not a problem of the file
        except sqlite3.OperationalError as error:
            text = str(error)
            if "locked" in text or "busy" in text:
                raise RunStoreError(f"the run store {self.path} is locked by another process (waited "
                                    f"{self.timeout:g} s); retry when it has finished, or give another "
                                    "file with --runs FILE") from None
            raise RunStoreError(f"the run store {self.path} cannot be used: {text}; check the file and "
                                "its folder are writable, or give another file with --runs FILE") from None
        except sqlite3.DatabaseError as error:
            raise RunStoreError(f"{self.path} is not a readable run store ({error}): the file is corrupt "
                                "or not an SQLite database. It was left untouched; move it away (mcudeploy "
                                "then starts a new store) or give another file with --runs FILE") from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction (``BEGIN IMMEDIATE``: waits for the writer lock up front)."""
        with self._guard():
            self._connection.execute("BEGIN IMMEDIATE")
            try:
                yield self._connection
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")

    def _query(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        with self._guard():
            return self._connection.execute(sql, parameters).fetchall()

    # -- recording -------------------------------------------------------------------------

    def begin(self, command: str, argv: Sequence[str], **details) -> Run:
        """Insert a new ``incomplete`` run and return its live handle (see :func:`.live.begin_record`)."""
        if "git_commit" not in details:
            details["git_commit"] = git_commit()
        record = begin_record(command, argv, **details)
        if details.get("model") is not None and Path(details["model"]).is_file():
            record.model_sha256 = self.file_sha256(Path(details["model"]))
        values = _run_row(record)
        with self.transaction() as connection:
            cursor = connection.execute(
                f"INSERT INTO runs ({', '.join(RUN_COLUMNS[1:])}, process_id) VALUES "
                f"({', '.join('?' * len(RUN_COLUMNS[1:]))}, ?)", (*values[1:], os.getpid()))
            record.id = cursor.lastrowid
        return Run(record, self)

    @contextmanager
    def record(self, command: str, argv: Sequence[str], **details) -> Iterator[Run]:
        """A run around a block: ``ok`` when it ends normally, ``failed`` (with the error's text
        and exit code) when it raises; the exception propagates."""
        run = self.begin(command, argv, **details)
        with run.recording():
            yield run

    def write_run(self, record: RunRecord, written: dict[str, int]) -> None:
        """Write what ``record`` gained since the last write (``written`` counts the messages
        already stored) in one transaction. Called by :class:`.live.Run`."""
        with self.transaction() as connection:
            connection.execute("UPDATE runs SET status = ?, exit_code = ?, finished_at = ?, target = ?, "
                               "stage = ?, git_commit = ? WHERE id = ?",
                               (record.status, record.exit_code, record.finished_at, record.target,
                                record.stage, record.git_commit, record.id))
            connection.executemany("INSERT OR REPLACE INTO figures VALUES (?, ?, ?)",
                                   [(record.id, name, value) for name, value in record.figures.items()])
            messages = [("warning", text) for text in record.warnings[written.get("warning", 0):]]
            messages += [("error", text) for text in record.errors[written.get("error", 0):]]
            connection.executemany("INSERT INTO messages (run_id, kind, text) VALUES (?, ?, ?)",
                                   [(record.id, kind, text) for kind, text in messages])
            connection.executemany("INSERT OR REPLACE INTO artefacts VALUES (?, ?, ?, ?)",
                                   [(record.id, a.path, a.sha256, a.size) for a in record.artefacts])
            connection.executemany("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)",
                                   [(record.id, name, value) for name, value in record.tags.items()])
            if record.payload is not None:
                data = zlib.compress(json.dumps(record.payload, default=str).encode("utf-8"), 3)
                connection.execute("INSERT OR REPLACE INTO payloads VALUES (?, ?, ?)",
                                   (record.id, PAYLOAD_ENCODING, data))
        written["warning"], written["error"] = len(record.warnings), len(record.errors)

    def file_sha256(self, path: Path) -> str:
        """SHA-256 of ``path``, cached by (absolute path, size, mtime) in the store."""
        status = path.stat()
        key = str(path.resolve())
        rows = self._query("SELECT sha256 FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                           (key, status.st_size, status.st_mtime_ns))
        if rows:
            return rows[0][0]
        digest = sha256_of_file(path)
        with self.transaction() as connection:
            connection.execute("INSERT OR REPLACE INTO file_hashes VALUES (?, ?, ?, ?)",
                               (key, status.st_size, status.st_mtime_ns, digest))
        return digest

    # -- reading ---------------------------------------------------------------------------

    def resolve(self, reference: str | int) -> int:
        """A run id from ``12``, ``last`` / ``latest``, or ``-N`` (the N-th most recent)."""
        kind, number = parse_reference(reference)
        count, first, newest = self._query("SELECT count(*), min(id), max(id) FROM runs")[0]
        known = f"it holds {count} run(s)" + (f", ids {first}-{newest}" if count else "")
        if kind == "back":
            rows = self._query("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (number - 1,))
        else:
            rows = self._query("SELECT id FROM runs WHERE id = ?", (number,))
        if not rows:
            raise UsageError(f"run {reference} is not in the run store {self.path} ({known}); list the "
                             "runs with 'mcudeploy runs list'")
        return int(rows[0][0])

    def get(self, reference: str | int, *, payload: bool = False) -> RunRecord:
        """The run ``reference`` names (see :meth:`resolve`), with its payload if asked."""
        run_id = self.resolve(reference)
        return self._records(f"WHERE id = {run_id}", payload=payload)[0]

    def list_runs(self, limit: int | None = None, command: str | None = None) -> list[RunRecord]:
        """Runs oldest first; ``limit`` keeps the most recent ones."""
        where = "WHERE command = ?" if command else ""
        limited = f"WHERE id IN (SELECT id FROM runs {where} ORDER BY id DESC LIMIT {clamp_limit(limit)})" \
            if limit is not None else where
        return self._records(limited, (command,) if command else ())

    def count_runs(self, command: str | None = None) -> int:
        """How many runs the store holds (of ``command`` only, when given)."""
        where, parameters = ("WHERE command = ?", (command,)) if command else ("", ())
        return int(self._query(f"SELECT COUNT(*) FROM runs {where}", parameters)[0][0])

    def integrity(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"`` for a sound database."""
        return "; ".join(row[0] for row in self._query("PRAGMA integrity_check"))

    def _records(self, where: str, parameters: Sequence[Any] = (), *, payload: bool = False) -> list[RunRecord]:
        rows = self._query(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs {where} ORDER BY id", parameters)
        records = {row[0]: _record_of(self.path, row) for row in rows}
        if not records:
            return []
        ids = f"({', '.join(str(i) for i in records)})"
        for run_id, name, value in self._query(f"SELECT run_id, name, value FROM figures WHERE run_id IN {ids} "
                                               "ORDER BY run_id, name"):
            records[run_id].figures[name] = value
        for run_id, kind, text in self._query(f"SELECT run_id, kind, text FROM messages WHERE run_id IN {ids} "
                                              "ORDER BY id"):
            (records[run_id].warnings if kind == "warning" else records[run_id].errors).append(text)
        for run_id, path, digest, size in self._query(f"SELECT * FROM artefacts WHERE run_id IN {ids} "
                                                      "ORDER BY run_id, path"):
            records[run_id].artefacts.append(Artefact(path, digest, size))
        for run_id, name, value in self._query(f"SELECT * FROM tags WHERE run_id IN {ids} ORDER BY name"):
            records[run_id].tags[name] = value
        if payload:
            for run_id, encoding, data in self._query(f"SELECT * FROM payloads WHERE run_id IN {ids}"):
                records[run_id].payload = _decode_payload(self.path, run_id, encoding, data)
        return list(records.values())


def _run_row(record: RunRecord) -> tuple:
    return (record.id, record.command, record.command_line, json.dumps(record.argv), record.stage,
            record.started_at, record.finished_at, record.status, record.exit_code,
            json.dumps(record.config, sort_keys=True, default=str), record.config_hash, record.model_path,
            record.model_sha256, record.tool_version, record.target, record.git_commit, record.working_dir)


def _record_of(path: Path, row: tuple) -> RunRecord:
    values = dict(zip(RUN_COLUMNS, row))
    for column, field in (("argv_json", "argv"), ("config_json", "config")):
        try:
            values[field] = json.loads(values.pop(column))
        except (TypeError, ValueError, RecursionError):
            raise RunStoreError(f"{path}: run {values['id']}'s stored {column} is not valid JSON: the store is "
                                "damaged (was it edited by another program?); the other runs are readable "
                                f"with 'mcudeploy runs show ID'") from None
    return RunRecord(**values)


def _decode_payload(path: Path, run_id: int, encoding: str, data: bytes) -> dict[str, Any]:
    if encoding != PAYLOAD_ENCODING:
        raise RunStoreError(f"{path}: run {run_id}'s payload is encoded as {encoding!r}, which this "
                            "mcudeploy cannot read; upgrade mcudeploy")
    try:
        return json.loads(zlib.decompress(data))
    except (zlib.error, ValueError) as error:
        raise RunStoreError(f"{path}: run {run_id}'s payload is corrupt ({error}); the rest of the run "
                            "is readable with 'mcudeploy runs show'") from None
