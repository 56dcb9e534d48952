"""Where benchmarks find their inputs and write their results (imported by every script here).

``SHARED`` is ``../shared`` beside the checkout, or ``$MCUDEPLOY_SHARED``, as for the tests.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCUDEPLOY_SHARED", REPO.parent / "shared"))
SHARED_MODELS = SHARED / "models"
RESULTS = REPO / "benchmarks" / "results"

# Every full-integer model in ../shared/models (the set issues 3-5 measure on).
INT8_MODELS = ["mlperf_tiny/resnet8_int8.tflite", "mlperf_tiny/dscnn_kws_int8.tflite",
               "mlperf_tiny/mobilenetv1_vww_int8.tflite", "mlperf_tiny/fc_autoencoder_int8.tflite",
               "mlperf_tiny/streaming_wakeword_int8.tflite", "tflite_micro/person_detect_int8.tflite",
               "tflite_micro/micro_speech_int8.tflite", "tflite_micro/hello_world_int8.tflite"]


def git_commit() -> str:
    """The checkout's short commit, for a results file (``unknown`` outside a git checkout)."""
    result = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return result.stdout.strip() or "unknown"
