"""The suite's parallel default (issue 27): ``-n auto --dist loadfile`` in pyproject's addopts,
and what ``auto`` means (tests/conftest.py::pytest_xdist_auto_num_workers)."""
from __future__ import annotations

import os
import tomllib
from types import SimpleNamespace

import pytest

import conftest
from conftest import REPO


def _config(*args: str):
    return SimpleNamespace(args=list(args), invocation_params=SimpleNamespace(dir=REPO))


def test_the_default_run_is_parallel_by_file_and_xdist_is_a_test_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    addopts = project["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert addopts[addopts.index("-n") + 1] == "auto" and addopts[addopts.index("--dist") + 1] == "loadfile"
    assert "--durations=20" in addopts
    assert any(requirement.startswith("pytest-xdist") for requirement in project["project"]["optional-dependencies"]["test"])


@pytest.fixture
def outside_a_worker(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)


@pytest.mark.parametrize("cores", [1, 2, 8])
def test_auto_is_one_worker_per_core_and_serial_on_one(outside_a_worker, monkeypatch, cores):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    expected = cores if cores > 1 else 0
    assert conftest.pytest_xdist_auto_num_workers(_config("tests")) == expected
    assert conftest.pytest_xdist_auto_num_workers(_config("tests/test_cli.py", "tests/test_plain_table.py")) == expected


@pytest.mark.parametrize("argument", ["tests/test_cli.py", "tests/test_cli.py::test_help", "tests/test_cli.py::a::b"])
def test_one_file_runs_serially(outside_a_worker, monkeypatch, argument):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert conftest.pytest_xdist_auto_num_workers(_config(argument)) == 0
    assert conftest.pytest_xdist_auto_num_workers(_config(argument, "tests/test_plain_table.py")) == 2


def test_a_pytest_started_inside_a_worker_is_serial_and_the_environment_overrides(outside_a_worker, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert conftest.pytest_xdist_auto_num_workers(_config("tests")) == 0
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    assert conftest.pytest_xdist_auto_num_workers(_config("tests")) is None     # xdist's own hook reads it
