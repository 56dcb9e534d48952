"""Float32 numpy kernels, one module per op family (mirroring :mod:`mcudeploy.ir.opdefs`).

Numerics: sums of products (Conv, ConvTranspose, Gemm, MatMul, pooling averages,
reductions, BatchNormalization, Softmax, Resize) are computed in float64 and rounded to
float32 once at the end. The result is then the correctly rounded value up to float64
error, independent of the BLAS summation order, so its distance to onnxruntime / LiteRT
is just *their* float32 accumulation error (well inside 1e-4 relative). Single-rounding
elementwise ops (Add, Mul, ...) run directly in the input dtype, exactly as the references.
"""
from .registry import Kernel, all_kernels, get_kernel, kernel

__all__ = ["Kernel", "all_kernels", "get_kernel", "kernel"]
