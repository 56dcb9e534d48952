"""The optional parts of mcudeploy and the packages they need (``pip install 'mcudeploy[EXTRA]'``).

``pip install mcudeploy`` brings what ``analyze``, ``lint``, ``plan``, ``estimate``, ``search``,
``generate``, ``run`` and ``validate`` need (numpy, onnx, the tflite schema, flatbuffers, rich,
jinja2). The rest is an extra, imported only where it is used:

    calib   onnxruntime   the fast float forward of calibration (numpy runs it without)
    plot    matplotlib    PNG pictures: plan --png, validate --plot, sweep --png
    exact   ortools       the exact (CP-SAT) allocator; the default portfolio races it when present
    sweep   dask[distributed]   mcudeploy sweep
    images  pillow        calibration from an image folder (quantize --calib FOLDER)
    keras   h5py          Keras .h5 / .keras models
    all     every extra above (the README's install line)

:func:`require` imports a module of an extra or raises one :class:`~mcudeploy.errors.UsageError`
naming the extra and the install line; :func:`available` asks without importing.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

# extra -> (the module that tells it is installed, the pip requirement it brings)
EXTRAS = {
    "calib": ("onnxruntime", "onnxruntime"),
    "plot": ("matplotlib", "matplotlib"),
    "exact": ("ortools", "ortools"),
    "sweep": ("distributed", "dask[distributed]"),
    "images": ("PIL", "pillow"),
    "keras": ("h5py", "h5py"),
    "board": ("serial", "pyserial"),
}


def available(extra: str) -> bool:
    """Whether the extra's package is installed (found, not imported)."""
    module = EXTRAS[extra][0]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):   # a module set to None in sys.modules, a broken package
        return False


def install_line(extra: str) -> str:
    return f"pip install 'mcudeploy[{extra}]'"


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """``module`` (part of ``extra``'s package), imported; else a :class:`UsageError`:
    ``plan --png needs matplotlib, which is not installed: pip install 'mcudeploy[plot]'``."""
    from .errors import UsageError

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UsageError(f"{purpose} needs {EXTRAS[extra][1]}, which is not installed ({error}): "
                         f"{install_line(extra)}") from None
