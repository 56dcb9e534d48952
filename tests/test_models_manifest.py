"""tests/models.toml describes every file the suite reads from ../shared: present with its
SHA-256 (so a changed model is noticed), and nothing in the folder left out of it."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO, SHARED, shared_file

sys.path.insert(0, str(REPO / "tools"))
import fetch_models  # noqa: E402


def test_every_manifest_file_is_present_with_its_hash():
    shared_file(SHARED / "models")
    assert fetch_models.check(SHARED) == []


def test_every_shared_file_is_in_the_manifest_with_a_source():
    shared_file(SHARED / "models")
    listed = {entry["path"] for entry in fetch_models.entries()}
    present = {p.relative_to(SHARED).as_posix() for p in SHARED.rglob("*") if p.is_file()}
    present = {p for p in present if not p.startswith(fetch_models.SKIPPED)}
    assert present - listed == set()
    for entry in fetch_models.entries():
        assert entry["source"] and entry["licence"] and len(entry["sha256"]) == 64


@pytest.mark.slow
def test_without_shared_a_test_skips_naming_the_file_and_fails_in_ci(tmp_path):
    """Without ``../shared`` a test that needs a model skips with the missing path and how to
    fetch it; with ``CI=true`` the same test fails (issue 27, point 10)."""
    import os
    import subprocess
    target = "tests/test_models_manifest.py::test_every_manifest_file_is_present_with_its_hash"
    outcomes = {}
    for ci in ("", "true"):
        env = {**os.environ, "MCUDEPLOY_SHARED": str(tmp_path / "absent"), "CI": ci}
        proc = subprocess.run([sys.executable, "-m", "pytest", target, "-q", "-p", "no:cacheprovider"], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
        outcomes[ci] = (proc.returncode, proc.stdout)
    code, out = outcomes[""]
    assert code == 0 and "1 skipped" in out and f"{tmp_path / 'absent' / 'models'} not available" in out
    assert "python tools/fetch_models.py" in out
    code, out = outcomes["true"]
    assert code == 1 and "1 failed" in out and "missing in CI" in out
