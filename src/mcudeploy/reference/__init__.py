"""Numpy executors for the IR: the executable specification of every op.

* :func:`run_float` — float32 reference (``float_executor``), kernels in ``float_kernels/``.
"""
from .float_executor import run_float

__all__ = ["run_float"]
