"""Elementwise math on one tensor (ONNX Exp, Log, Sqrt, ...; TFLite EXP, LOG, SQRT, RSQRT,
ABS, ...): same shape and dtype out, one MACC per element.

Float semantics are IEEE (``Log(0) = -inf``, ``Sqrt(-1) = NaN``); integer inputs are allowed
where ONNX allows them (Abs, Sign) and keep their dtype. ``Neg`` and ``Reciprocal`` are not
IR ops: importers write them as ``Mul(X, -1)`` / ``Sub(0, X)`` and ``Div(1, X)``, which are
exact.
"""
from __future__ import annotations

from ..registry import op
from ._common import macc_per_output, same_type

_UNARY = {
    "Exp": "``Y = exp(X)``",
    "Log": "``Y = ln(X)`` (``-inf`` at 0, NaN below 0)",
    "Sqrt": "``Y = sqrt(X)`` (NaN below 0)",
    "Rsqrt": "``Y = 1 / sqrt(X)`` (TFLite RSQRT; ``inf`` at 0). Quantized: TFLM's int8 "
             "RSQRT (inverse square root by Newton iteration, then requantization)",
    "Abs": "``Y = |X|``; integers keep their dtype (``|INT_MIN|`` wraps, as in C). Quantized: "
           "``Y = clamp(zp_out + mbqm(|X - zp_in|, s_in / s_out))`` (TFLM ABS)",
    "Sign": "``Y = -1, 0 or 1`` by the sign of X",
    "Floor": "``Y = floor(X)``",
    "Ceil": "``Y = ceil(X)``",
    "Round": "``Y = round(X)``, halves to even",
    "Erf": "``Y = erf(X)``",
    "Sin": "``Y = sin(X)``", "Cos": "``Y = cos(X)``", "Tan": "``Y = tan(X)``",
    "Asin": "``Y = asin(X)``", "Acos": "``Y = acos(X)``", "Atan": "``Y = atan(X)``",
    "Sinh": "``Y = sinh(X)``", "Cosh": "``Y = cosh(X)``", "Asinh": "``Y = asinh(X)``",
    "Acosh": "``Y = acosh(X)``", "Atanh": "``Y = atanh(X)``",
}

for _name, _doc in _UNARY.items():
    def _infer(inputs, attrs):
        return same_type(inputs)
    _infer.__doc__ = _doc
    op(_name, "elementwise", inputs=("X",), macc=macc_per_output)(_infer)
