"""Unary activations: same shape in and out, one MACC per element; same dtype too, except
Softmax's optional ``output_dtype`` (TFLite's int8 -> int16 SOFTMAX). Then ONNX's other
activations (Elu, Selu, Celu, ThresholdedRelu, Softplus, Softsign, Mish, Gelu, Shrink,
Swish; LogSoftmax and Hardmax over one axis). Formulas in each docstring; defaults are
ONNX's."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_output, same_type

_UNARY = {
    "Relu": ({}, "``Y = max(X, 0)``"),
    "Sigmoid": ({}, "``Y = 1 / (1 + exp(-X))`` (TFLite LOGISTIC)"),
    "Tanh": ({}, "``Y = tanh(X)``"),
    "HardSwish": ({}, "``Y = X * max(0, min(1, X / 6 + 1/2))``"),
    "HardSigmoid": ({"alpha": Attr("float", 0.2), "beta": Attr("float", 0.5)},
                    "``Y = max(0, min(1, alpha * X + beta))``"),
    "LeakyRelu": ({"alpha": Attr("float", 0.01)}, "``Y = X if X >= 0 else alpha * X``"),
    "Clip": ({"min": Attr("float?", None), "max": Attr("float?", None)},
             "``Y = min(max(X, min), max)``; a missing bound is unbounded. ReLU6 is Clip(0, 6)."),
}

for _name, (_attrs, _doc) in _UNARY.items():
    def _infer(inputs, attrs):
        return same_type(inputs)
    _infer.__doc__ = _doc
    op(_name, "activation", inputs=("X",), attrs=_attrs, macc=macc_per_output)(_infer)


@op("Softmax", "activation", inputs=("X",), macc=macc_per_output,
    attrs={"axis": Attr("int", -1), "beta": Attr("float", 1.0),
           "output_dtype": Attr("str", "same", ("same", "int8", "int16"))})
def _infer_softmax(inputs, attrs):
    """``Y = exp(beta * X) / sum(exp(beta * X), axis)`` over one axis (ONNX opset-13
    semantics; TFLite's ``beta`` kept). ``output_dtype``: ``same`` (default) gives Y the
    dtype of X; ``int8`` / ``int16`` set it explicitly (TFLite's int8 -> int16 SOFTMAX)."""
    x = inputs[0]
    if attrs.get("output_dtype", "same") == "same":
        return same_type(inputs)
    if not x.dtype.is_integer:
        raise ValueError(f"output_dtype {attrs['output_dtype']} needs a quantized (integer) input, "
                         f"got {x.dtype.value}")
    return [TensorType(DType(attrs["output_dtype"]), x.shape)]


_ONNX_UNARY = {   # ONNX activations beyond those above, float (LogSoftmax below has int8 too)
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

for _name, (_attrs, _doc) in _ONNX_UNARY.items():
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
