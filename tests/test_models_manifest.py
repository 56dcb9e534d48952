"""tests/models.toml describes every file the suite reads from ../shared: present with its
SHA-256 (so a changed model is noticed), and nothing in the folder left out of it."""
from __future__ import annotations

import sys

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
