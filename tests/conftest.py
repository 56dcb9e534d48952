"""Shared test fixtures.

The real models live in ``../shared`` beside the checkout (read-only); set
``MCUDEPLOY_SHARED`` to point elsewhere. Tests that need them skip with a reason when the
folder is absent, except in CI (``CI=true``), where a missing folder is an error; the same
holds for reference libraries (:func:`reference_module`).
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCUDEPLOY_SHARED", REPO.parent / "shared"))
MODELS = SHARED / "models"
DATA = SHARED / "data"

# Every full-integer model in ../shared/models: the set bit-exactness is proved on.
INT8_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
               "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
               "mlperf_tiny/streaming_wakeword_int8.tflite", "tflite_micro/person_detect_int8.tflite",
               "tflite_micro/micro_speech_int8.tflite", "tflite_micro/hello_world_int8.tflite"]


def shared_model(relative: str) -> Path:
    """Path of a model under ``../shared/models``; skip (or fail in CI) when missing."""
    path = MODELS / relative
    if not path.exists():
        if os.environ.get("CI") == "true":
            raise FileNotFoundError(f"shared model {path} missing in CI")
        pytest.skip(f"shared model {path} not available")
    return path


def reference_module(name: str):
    """Import the reference library ``name`` (e.g. ``tf_keras``); skip when it is not
    installed, except in CI (``CI=true``), where a missing reference is an error."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"reference {name} is not installed (pip install -e '.[test]')")


@pytest.fixture
def models_dir() -> Path:
    if not MODELS.exists():
        pytest.skip(f"{MODELS} not available")
    return MODELS


@pytest.fixture(autouse=True)
def _no_run_records(monkeypatch):
    """Commands run by tests (in process or as subprocesses) record no runs, so the suite
    leaves no ``.mcudeploy/`` behind; the run-store tests switch recording back on with
    their own store in ``tmp_path``."""
    monkeypatch.setenv("MCUDEPLOY_NO_RECORD", "1")
    monkeypatch.delenv("MCUDEPLOY_RUNS", raising=False)


@pytest.fixture
def run_store(tmp_path, monkeypatch) -> Path:
    """Recording switched on, into a fresh store in ``tmp_path`` (its path)."""
    monkeypatch.delenv("MCUDEPLOY_NO_RECORD")
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("MCUDEPLOY_RUNS", str(path))
    return path
