"""More activations (ONNX Elu, Selu, Celu, ThresholdedRelu, Softplus, Softsign, Mish, Gelu,
Shrink, Swish; LogSoftmax and Hardmax over one axis): same shape and dtype in and out, one
MACC per element. Formulas in each docstring; defaults are ONNX's."""
from __future__ import annotations

from ..registry import Attr, op
from ._common import macc_per_output, same_type

_UNARY = {
    "Elu": ({"alpha": Attr("float", 1.0)}, "``Y = X if X >= 0 else alpha * (exp(X) - 1)``"),
    "Selu": ({"alpha": Attr("float", 1.67326319217681884765625),
              "gamma": Attr("float", 1.05070102214813232421875)},
             "``Y = gamma * (X if X > 0 else alpha * (exp(X) - 1))``"),
    "Celu": ({"alpha": Attr("float", 1.0)},
             "``Y = max(0, X) + min(0, alpha * (exp(X / alpha) - 1))``"),
    "ThresholdedRelu": ({"alpha": Attr("float", 1.0)}, "``Y = X if X > alpha else 0``"),
    "Softplus": ({}, "``Y = ln(1 + exp(X))``"),
    "Softsign": ({}, "``Y = X / (1 + |X|)``"),
    "Mish": ({}, "``Y = X * tanh(ln(1 + exp(X)))``"),
    "Gelu": ({"approximate": Attr("str", "none", ("none", "tanh"))},
             "``Y = X / 2 * (1 + erf(X / sqrt(2)))``; ``approximate=tanh``: "
             "``Y = X / 2 * (1 + tanh(sqrt(2 / pi) * (X + 0.044715 X^3)))``"),
    "Shrink": ({"bias": Attr("float", 0.0), "lambd": Attr("float", 0.5)},
               "``Y = X + bias if X < -lambd; X - bias if X > lambd; else 0``"),
    "Swish": ({"alpha": Attr("float", 1.0)}, "``Y = X * sigmoid(alpha * X)``"),
}

for _name, (_attrs, _doc) in _UNARY.items():
    def _infer(inputs, attrs):
        return same_type(inputs)
    _infer.__doc__ = _doc
    op(_name, "activation", inputs=("X",), attrs=_attrs, macc=macc_per_output)(_infer)


def _check_axis(inputs, attrs) -> None:
    rank = inputs[0].rank
    if not -rank <= attrs["axis"] < max(rank, 1):
        raise ValueError(f"axis {attrs['axis']} out of range for {inputs[0].type_str()}")


@op("LogSoftmax", "activation", inputs=("X",), attrs={"axis": Attr("int", -1)},
    macc=macc_per_output)
def log_softmax(inputs, attrs):
    """``Y = X - max - ln(sum(exp(X - max), axis))`` over one axis (ONNX opset-13
    semantics; TFLite LOG_SOFTMAX is the last axis). Quantized (TFLM int8): output scale
    16/256 and zero point 127 required; gemmlowp fixed-point exp / log as in TFLM."""
    _check_axis(inputs, attrs)
    return same_type(inputs)


@op("Hardmax", "activation", inputs=("X",), attrs={"axis": Attr("int", -1)},
    macc=macc_per_output)
def hardmax(inputs, attrs):
    """``Y = 1`` at the first maximum along ``axis``, 0 elsewhere."""
    _check_axis(inputs, attrs)
    return same_type(inputs)
