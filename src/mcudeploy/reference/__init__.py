"""Numpy executors for the IR: the executable specification of every op.

* :func:`run_float` — float32 reference (``float_executor``), kernels in ``float_kernels/``.
* :func:`run_int` — bit-exact integer reference following TFLite Micro's reference kernels
  (``int_executor``), kernels in ``int_kernels/`` with a Prepare / Eval split whose
  parameters the C code generator emits; batched over a leading sample axis.
"""
from .float_executor import run_float
from .int_executor import prepare_graph, run_int

__all__ = ["prepare_graph", "run_float", "run_int"]
