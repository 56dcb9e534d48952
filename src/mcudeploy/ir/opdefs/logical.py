"""Comparisons, boolean logic and selection: Equal, Less, Greater, LessOrEqual,
GreaterOrEqual (same-dtype operands -> bool), And, Or, Xor, Not (bool), IsNaN, IsInf
(float -> bool) and Where (bool condition picks X or Y). Numpy broadcasting; one MACC per
output element."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import broadcast, macc_per_output

_COMPARISONS = {"Equal": "A == B", "Less": "A < B", "Greater": "A > B",
                "LessOrEqual": "A <= B", "GreaterOrEqual": "A >= B"}
_LOGIC = {"And": "A and B", "Or": "A or B", "Xor": "A xor B"}


def _compare(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if a.dtype != b.dtype:
        raise ValueError(f"operands have different dtypes: {a.type_str()} and {b.type_str()}")
    return [TensorType(DType.BOOL, broadcast(a.shape, b.shape))]


def _need_bool(*values) -> None:
    for value in values:
        if value.dtype != DType.BOOL:
            raise ValueError(f"operand {value.type_str()} must be bool")


def _logic(inputs, attrs):
    _need_bool(inputs[0], inputs[1])
    return _compare(inputs, attrs)


for _name, _formula in _COMPARISONS.items():
    def _infer(inputs, attrs):
        return _compare(inputs, attrs)
    _infer.__doc__ = f"``Y = {_formula}`` (bool) with numpy broadcasting; NaN compares false."
    op(_name, "elementwise", inputs=("A", "B"), macc=macc_per_output)(_infer)

for _name, _formula in _LOGIC.items():
    def _infer(inputs, attrs):
        return _logic(inputs, attrs)
    _infer.__doc__ = f"``Y = {_formula}`` on bool operands with numpy broadcasting."
    op(_name, "elementwise", inputs=("A", "B"), macc=macc_per_output)(_infer)


@op("Not", "elementwise", inputs=("X",), macc=macc_per_output)
def not_(inputs, attrs):
    """``Y = not X`` (bool)."""
    _need_bool(inputs[0])
    return [TensorType(DType.BOOL, inputs[0].shape)]


@op("IsNaN", "elementwise", inputs=("X",), macc=macc_per_output)
def is_nan(inputs, attrs):
    """``Y = X is NaN`` (bool)."""
    return [TensorType(DType.BOOL, inputs[0].shape)]


@op("IsInf", "elementwise", inputs=("X",), macc=macc_per_output,
    attrs={"detect_negative": Attr("int", 1, (0, 1)), "detect_positive": Attr("int", 1, (0, 1))})
def is_inf(inputs, attrs):
    """``Y = X is -inf (when detect_negative) or +inf (when detect_positive)`` (bool)."""
    return [TensorType(DType.BOOL, inputs[0].shape)]


@op("Where", "elementwise", inputs=("condition", "X", "Y"), macc=macc_per_output)
def where(inputs, attrs):
    """``Z = X where condition else Y``, the three broadcast together; X and Y share a dtype."""
    condition, x, y = inputs
    _need_bool(condition)
    if x.dtype != y.dtype:
        raise ValueError(f"X {x.type_str()} and Y {y.type_str()} have different dtypes")
    return [TensorType(x.dtype, broadcast(condition.shape, x.shape, y.shape))]
