"""Quantization: the integer requantization arithmetic (``fixed_point``) shared by the
bit-exact integer reference executor and, later, the C runtime and the quantizer.

Post-training quantization (``quantize_model``, ``QuantizationConfig``) lives in
:mod:`.quantizer`; it is loaded on first use, because the integer kernels import
``fixed_point`` from this package and the quantizer imports the kernels.
"""
from . import fixed_point

__all__ = ["QuantizationConfig", "fixed_point", "quantize_model"]


def __getattr__(name: str):
    if name in ("QuantizationConfig", "quantize_model"):
        from . import quantizer
        return getattr(quantizer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
