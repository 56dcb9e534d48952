"""Independent reference runtimes, for validation and for the test suite and benchmarks.

TensorFlow Lite Micro (the ``tflite-micro`` package, a test dependency) is the reference
whose integer results mcudeploy matches bit for bit. It is imported only when used, so
the rest of mcudeploy works without it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UsageError


def tflm_interpreter(path: str | Path):
    """A TFLite Micro interpreter for the model at ``path``."""
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        raise UsageError("TFLite Micro is not installed: pip install -e '.[test]' "
                         "(package tflite-micro)") from None
    return runtime.Interpreter.from_file(str(path))


def tflm_run(interpreter, batch: np.ndarray, output_index: int = 0) -> np.ndarray:
    """Output ``output_index`` for every sample of ``batch`` (one invoke each, input 0)."""
    outputs = []
    for sample in batch:
        interpreter.set_input(sample, 0)
        interpreter.invoke()
        outputs.append(interpreter.get_output(output_index).copy())
    return np.stack(outputs)
