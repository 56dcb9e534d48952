"""More binary elementwise ops with numpy broadcasting: Max, Min, SquaredDifference, Pow,
Mod, BitShift, BitwiseAnd / Or / Xor (and the unary BitwiseNot). One MACC per output
element.

ONNX's variadic Max / Min / Sum / Mean are written by the importer as chains of the
binary ops (``Max(a, b, c) = Max(Max(a, b), c)``, exact); TFLite MAXIMUM / MINIMUM are
the binary ops themselves.
"""
from __future__ import annotations

from ..registry import Attr, TensorType, op
from ._common import broadcast, macc_per_output, same_type


def _same_dtype(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if a.dtype != b.dtype:
        raise ValueError(f"operands have different dtypes: {a.type_str()} and {b.type_str()}")
    return [TensorType(a.dtype, broadcast(a.shape, b.shape))]


_SAME_DTYPE = {
    "Max": ({}, "``Y = max(A, B)`` (NaN if either is NaN). Quantized (TFLM MAXIMUM): the raw "
                "integers are compared; A, B and Y share scale and zero point"),
    "Min": ({}, "``Y = min(A, B)``, as Max. Quantized: TFLM MINIMUM"),
    "SquaredDifference": ({}, "``Y = (A - B)^2`` (TFLite SQUARED_DIFFERENCE). Quantized: TFLM's "
                              "int8 arithmetic (inputs rescaled like Add with left shift 7, "
                              "int16 with left shift 0)"),
    "Mod": ({"fmod": Attr("int", 0, (0, 1))},
            "``Y = A mod B``: the sign of B (``fmod=0``, integers only) or of A (``fmod=1``, C "
            "fmod); integer ``B = 0`` gives 0"),
    "BitShift": ({"direction": Attr("str", "LEFT", ("LEFT", "RIGHT"))},
                 "``Y = A << B`` or ``A >> B`` on unsigned integers (shifts of the bit width "
                 "or more give 0)"),
    "BitwiseAnd": ({}, "``Y = A & B`` (integers)"),
    "BitwiseOr": ({}, "``Y = A | B`` (integers)"),
    "BitwiseXor": ({}, "``Y = A ^ B`` (integers)"),
}

for _name, (_attrs, _doc) in _SAME_DTYPE.items():
    def _infer(inputs, attrs):
        return _same_dtype(inputs, attrs)
    _infer.__doc__ = _doc + "; numpy broadcasting."
    op(_name, "elementwise", inputs=("A", "B"), attrs=_attrs, macc=macc_per_output)(_infer)


@op("Pow", "elementwise", inputs=("X", "Y"), macc=macc_per_output)
def pow_(inputs, attrs):
    """``Z = X ^ Y`` with numpy broadcasting; Z has X's dtype (an integer result is the
    float power truncated toward zero, as onnxruntime computes it)."""
    x, y = inputs[0], inputs[1]
    return [TensorType(x.dtype, broadcast(x.shape, y.shape))]


@op("BitwiseNot", "elementwise", inputs=("X",), macc=macc_per_output)
def bitwise_not(inputs, attrs):
    """``Y = ~X`` (integers)."""
    return same_type(inputs)
