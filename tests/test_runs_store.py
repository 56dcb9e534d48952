"""The run store: records, statuses, concurrency, refusal of files that are not stores, migration,
diff and CSV export (the library API; the CLI is in test_runs_cli.py)."""
from __future__ import annotations

import csv
import hashlib
import io
import multiprocessing
import sqlite3
import subprocess
import sys

import pytest

from mcudeploy.errors import DoesNotFitError, UsageError
from mcudeploy.runs import RunStore, RunStoreError, schema
from mcudeploy.runs.diff import diff_runs
from mcudeploy.runs.export import safe_cell, to_csv
from mcudeploy.runs.location import default_store_path, find_project_file, git_commit


@pytest.fixture
def store(tmp_path):
    with RunStore.open(tmp_path / ".mcudeploy" / "runs.sqlite") as opened:
        yield opened


def test_a_run_records_everything_and_reads_back(store, tmp_path):
    model = tmp_path / "m.tflite"
    model.write_bytes(b"model bytes")
    artefact = tmp_path / "plan.json"
    artefact.write_text("{}")
    with store.record("plan", ["plan", str(model)], config={"alignment": 16, "output": "x"},
                      unhashed=["output"], model=model, target="stm32h743", stage="plan",
                      tags={"sweep": "a"}) as run:
        run.figure("arena_bytes", 33312)
        run.figures({"cosine": 0.999, "skipped": None, "nan": float("nan"), "fits": True})
        run.artefact(artefact)
        run.warn("a warning")
        run.payload_section("plan", {"arena_bytes": 33312})
    record = store.get("last", payload=True)
    assert (record.status, record.exit_code, record.command, record.stage) == ("ok", 0, "plan", "plan")
    assert record.figures == {"arena_bytes": 33312.0, "cosine": 0.999, "fits": 1.0}
    assert record.model_sha256 == hashlib.sha256(b"model bytes").hexdigest()
    assert record.artefacts[0].sha256 == hashlib.sha256(b"{}").hexdigest() and record.artefacts[0].size == 2
    assert record.warnings == ["a warning"] and record.errors == [] and record.tags == {"sweep": "a"}
    assert record.payload == {"schema": 1, "plan": {"arena_bytes": 33312}}
    assert record.config == {"alignment": 16, "output": "x"} and record.tool_version
    assert record.command_line == f"mcudeploy plan {model}" and record.finished_at >= record.started_at
    with store.record("plan", [], config={"alignment": 16, "output": "elsewhere"}, unhashed=["output"]):
        pass
    assert store.get("last").config_hash == record.config_hash     # output paths are not hashed


def test_an_exception_marks_the_run_failed_with_its_text_and_exit_code(store):
    with pytest.raises(DoesNotFitError):
        with store.record("plan", []):
            raise DoesNotFitError("does not fit: DTCM by 12832 bytes")
    with pytest.raises(ZeroDivisionError):
        with store.record("plan", []):
            raise ZeroDivisionError("a bug inside the command")
    failed_fit, bug = store.list_runs()
    assert (failed_fit.status, failed_fit.exit_code, failed_fit.errors) == (
        "failed", 8, ["does not fit: DTCM by 12832 bytes"])
    assert bug.status == "failed" and bug.exit_code == 1 and bug.errors[0].startswith("ZeroDivisionError")


KILLED = """
import os, signal, sys
from mcudeploy.runs import RunStore
store = RunStore.open(sys.argv[1])
run = store.begin("search", ["search"], config={{}})
run.figure("trial", 1)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_midway_leaves_an_incomplete_run(tmp_path):
    path = tmp_path / "runs.sqlite"
    result = subprocess.run([sys.executable, "-c", KILLED.format(), str(path)], timeout=60)
    assert result.returncode != 0
    with RunStore.open(path) as store:
        record = store.get("last")
        assert (record.status, record.exit_code, record.finished_at) == ("incomplete", None, None)
        assert store.integrity() == "ok"


def _writer(path: str, worker: int, count: int, start) -> None:
    store = RunStore.open(path, timeout=30)
    start.wait(60)
    for index in range(count):
        with store.record("plan", [str(worker), str(index)], config={"worker": worker}) as run:
            run.figure("index", index)
            run.warn(f"worker {worker} run {index}")
    store.close()


def test_four_processes_writing_at_once_never_corrupt_the_store(tmp_path):
    path = tmp_path / "runs.sqlite"
    RunStore.open(path).close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)      # all four begin writing together
    workers = [context.Process(target=_writer, args=(str(path), worker, 25, start)) for worker in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    with RunStore.open(path) as store:
        records = store.list_runs()
        assert len(records) == 100 and store.integrity() == "ok"
        assert all(r.status == "ok" and len(r.warnings) == 1 for r in records)
        per_worker = {w: sorted(int(r.figures["index"]) for r in records if r.config["worker"] == w) for w in range(4)}
        assert per_worker == {w: list(range(25)) for w in range(4)}
        order = [r.config["worker"] for r in records]
        assert sum(a != b for a, b in zip(order, order[1:])) >= 3, "the writers never overlapped"


@pytest.mark.parametrize("content", [b"this is not a database, it is a text file\n" * 20,
                                     b"SQLite format 3\x00" + b"\xff" * 2000])
def test_a_file_that_is_not_a_store_is_refused_and_left_untouched(tmp_path, content):
    path = tmp_path / "runs.sqlite"
    path.write_bytes(content)
    with pytest.raises(RunStoreError, match=str(path).replace("/", ".") + ".*(corrupt|not).*--runs"):
        RunStore.open(path)
    assert path.read_bytes() == content


def test_another_applications_database_and_a_newer_store_are_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE accounts (name TEXT)")
    before = other.read_bytes()
    with pytest.raises(RunStoreError, match="another application"):
        RunStore.open(other)
    assert other.read_bytes() == before
    newer = tmp_path / "newer.sqlite"
    RunStore.open(newer).close()
    with sqlite3.connect(newer) as connection:
        connection.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    with pytest.raises(RunStoreError, match="newer mcudeploy"):
        RunStore.open(newer)


def test_a_locked_store_gives_one_clear_error(tmp_path):
    path = tmp_path / "runs.sqlite"
    RunStore.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with RunStore.open(path, timeout=0.2) as store:
            with pytest.raises(RunStoreError, match=f"{path} is locked by another process.*--runs"):
                store.begin("plan", [])
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_migration_hook_upgrades_an_older_store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    with RunStore.open(path) as store:
        with store.record("plan", []):
            pass
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(schema.MIGRATIONS, 1, lambda c: c.execute("ALTER TABLE runs ADD COLUMN note TEXT"))
    with RunStore.open(path) as store:
        assert store.get(1).status == "ok"
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
        assert "note" in [row[1] for row in connection.execute("PRAGMA table_info(runs)")]


def test_run_references_and_unknown_ids(store):
    for index in range(3):
        with store.record("plan", [str(index)]):
            pass
    assert [store.resolve(r) for r in ("1", 3, "last", "latest", "-1", "-3")] == [1, 3, 3, 3, 3, 1]
    with pytest.raises(UsageError, match="run 9 is not in the run store .* ids 1-3.*runs list"):
        store.get("9")
    with pytest.raises(UsageError, match="not a run id"):
        store.get("yesterday")


def test_diff_names_what_changed_and_what_moved(store, tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"v1")
    with store.record("plan", [], config={"alignment": 16, "reserve": "0"}, model=model, target="a") as run:
        run.figures({"arena_bytes": 1000, "fits": 1, "only_old": 5})
    model.write_bytes(b"v2 longer")
    with store.record("plan", [], config={"alignment": 32, "reserve": "0", "new": 1}, model=model, target="b") as run:
        run.figures({"arena_bytes": 1250, "fits": 1})
    difference = diff_runs(store.get(1), store.get(2))
    changed = {change.what: (change.old, change.new) for change in difference.changes}
    assert changed["config.alignment"] == (16, 32) and changed["config.new"] == (None, 1)
    assert changed["target"] == ("a", "b") and "model_sha256" in changed and "config.reserve" not in changed
    moves = {move.name: move for move in difference.moved}
    assert set(moves) == {"arena_bytes", "only_old"}
    assert moves["arena_bytes"].relative == pytest.approx(0.25) and moves["only_old"].new is None


def test_csv_export_has_figures_as_columns_and_defuses_formulas(store):
    with store.record("=cmd()", ["-x"], target="+SUM(A1)", tags={"@sweep": ""}) as run:
        run.figures({"arena_bytes": 64, "delta": -3.5})
    with store.record("plan", []) as run:
        run.figure("cosine", 0.5)
    rows = list(csv.DictReader(io.StringIO(to_csv(store.list_runs()))))
    assert [row["figure:arena_bytes"] for row in rows] == ["64", ""]
    assert rows[0]["figure:delta"] == "-3.5" and rows[1]["figure:cosine"] == "0.5"
    assert rows[0]["command"] == "'=cmd()" and rows[0]["target"] == "'+SUM(A1)" and rows[0]["tags"] == "'@sweep"
    assert rows[0]["command_line"] == "mcudeploy -x"
    assert [safe_cell(v) for v in ("-1", "\tx", "plain", 5)] == ["'-1", "'\tx", "plain", 5]


def test_store_location_follows_the_project_file_and_the_environment(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "mcudeploy.toml").write_text("")
    assert find_project_file(project / "sub") == project / "mcudeploy.toml"
    assert default_store_path(project / "sub") == project / ".mcudeploy" / "runs.sqlite"
    lone = tmp_path / "lone"
    lone.mkdir()
    assert default_store_path(lone) == lone / ".mcudeploy" / "runs.sqlite"
    monkeypatch.setenv("MCUDEPLOY_RUNS", str(tmp_path / "x.sqlite"))
    assert default_store_path(lone) == tmp_path / "x.sqlite"


def test_git_commit_inside_a_repository_and_none_outside(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    environment = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                   "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for command in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(command, cwd=repo, check=True, env=environment, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert git_commit(repo) == head and len(head) == 40
    (tmp_path / "plain").mkdir()
    assert git_commit(tmp_path / "plain") is None
