"""Bit-exact integer numpy kernels, one module per op family (mirroring
:mod:`mcudeploy.ir.opdefs`), each split into ``prepare`` (parameters) and ``eval``
(arithmetic) like TensorFlow Lite Micro's kernels. The arithmetic primitives live in
:mod:`mcudeploy.arithmetic.fixed_point`.

Dot products (Conv, ConvTranspose, Gemm) run as float64 matrix products on integer-valued
operands: every product and partial sum is an integer below 2^53 in magnitude (checked in
``_common.exact_dot``), so the float64 result is the exact integer sum, independent of
summation order, and BLAS makes it fast.
"""
from .registry import IntKernel, all_int_kernels, get_int_kernel, int_kernel, prepare_node

__all__ = ["IntKernel", "all_int_kernels", "get_int_kernel", "int_kernel", "prepare_node"]
