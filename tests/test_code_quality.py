"""The linters pass on the whole tree: ``ruff check`` (style rules of pyproject.toml) and
``mypy`` (type checking of src/mcudeploy, configured in pyproject.toml).

Both run as subprocesses from this checkout's root (found from this file), with the
interpreter running the tests, so they check these files with the configuration next to
them. They are test dependencies (the ``test`` extra): a missing tool fails, it is not
skipped.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUFF_TIMEOUT_S = 300
MYPY_TIMEOUT_S = 900


def _run(arguments: list[str], timeout: float) -> subprocess.CompletedProcess:
    environment = {name: value for name, value in os.environ.items() if name != "MYPYPATH"}
    return subprocess.run([sys.executable, "-m", *arguments], cwd=ROOT, env=environment, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _report(result: subprocess.CompletedProcess) -> str:
    return f"exit code {result.returncode}\n{result.stdout}\n{result.stderr}"


def test_ruff_passes():
    result = _run(["ruff", "check", "src", "tests", "tools", "benchmarks"], RUFF_TIMEOUT_S)
    assert result.returncode == 0, _report(result)


@pytest.mark.slow
def test_mypy_passes():
    result = _run(["mypy"], MYPY_TIMEOUT_S)
    assert result.returncode == 0 and "Success: no issues found" in result.stdout, _report(result)
    # it checked this checkout's package (pyproject.toml: files = src/mcudeploy), every module
    checked = re.search(r"in (\d+) source files", result.stdout)
    assert checked is not None, _report(result)
    assert int(checked.group(1)) == len(list((ROOT / "src" / "mcudeploy").rglob("*.py"))), _report(result)
