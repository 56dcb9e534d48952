"""Shared test fixtures.

The real models live in ``../shared`` beside the checkout (read-only); set
``MCUDEPLOY_SHARED`` to point elsewhere. ``tests/models.toml`` lists every file the suite
reads there (public source, licence, SHA-256); ``python tools/fetch_models.py`` fetches them
on a machine with the internet. Tests that need them skip with a reason when they are
absent, except in CI (``CI=true``), where a missing file is an error.

The independent references (onnxruntime, LiteRT, TFLite Micro, ...) come with the ``test``
extra: :func:`require` imports one, skipping with the install line when it is missing, and
failing in CI, where a reference that silently skipped would leave a check unmade.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

# One BLAS / OpenMP / TensorFlow thread in each pytest-xdist worker (and in what it starts): the
# workers are the parallelism, one per core. With each library's default (a thread per core)
# two workers oversubscribe two cores, and the spinning threads slow each other down: the
# MNIST training of tests/test_ptq_quality.py took 34-36 s in each of two concurrent
# processes, 1.8-2.3 s with one thread each. Set before numpy is first imported (just below).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                      "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ.setdefault(_variable, "1")

try:
    # OR-Tools must be loaded before TensorFlow in one process: both bundle abseil, and CP-SAT
    # segfaults when TensorFlow's copy came first (ortools 9.15 + tensorflow 2.21: the exact
    # allocator on any NoOverlap2D model). mcudeploy never imports TensorFlow; the Keras tests
    # use it as their reference, in the same pytest process as the allocator tests.
    import ortools.sat.python.cp_model  # noqa: F401
except ImportError:   # the exact extra is absent: nothing to order
    pass

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCUDEPLOY_SHARED", REPO.parent / "shared"))
MODELS = SHARED / "models"
DATA = SHARED / "data"

# Every full-integer model in ../shared/models: the set bit-exactness is proved on.
INT8_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
               "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
               "mlperf_tiny/streaming_wakeword_int8.tflite", "tflite_micro/person_detect_int8.tflite",
               "tflite_micro/micro_speech_int8.tflite", "tflite_micro/hello_world_int8.tflite"]


IN_CI = os.environ.get("CI") == "true"
INSTALL = "pip install -e '.[test]'"


def shared_file(path: Path, allow_module_level: bool = False) -> Path:
    """``path`` (under ``../shared``); skip (or fail in CI) when missing (``allow_module_level``:
    called while a test module is imported, which then skips whole)."""
    if not path.exists():
        if IN_CI:
            raise FileNotFoundError(f"shared file {path} missing in CI")
        pytest.skip(f"{path} not available (tests/models.toml; python tools/fetch_models.py)",
                    allow_module_level=allow_module_level)
    return path


def shared_model(relative: str) -> Path:
    """Path of a model under ``../shared/models``; skip (or fail in CI) when missing."""
    return shared_file(MODELS / relative)


def require(module: str) -> ModuleType:
    """The test reference ``module``, imported; skip when it is not installed (fail in CI)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if IN_CI:
            raise ImportError(f"test reference {module} missing in CI: {INSTALL}") from err
        pytest.skip(f"{module} not installed: {INSTALL}", allow_module_level=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """Workers for ``-n auto`` (pyproject's addopts): one per core, or none (a serial run) on
    one core, for one test file or node id (xdist's start-up, about 4 s, is more than it
    saves there), and for a pytest that a test starts inside a worker (the sanitizer
    re-runs), which would otherwise start workers of its own. ``-n N`` overrides, and so
    does ``PYTEST_XDIST_AUTO_NUM_WORKERS``."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None   # xdist's own hook reads it
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return 0
    files = {config.invocation_params.dir / argument.split("::")[0] for argument in config.args}
    if len(files) == 1 and next(iter(files)).is_file():
        return 0
    cores = len(os.sched_getaffinity(0))
    return cores if cores > 1 else 0


@pytest.fixture
def models_dir() -> Path:
    return shared_file(MODELS)


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
