"""Unary activations: same shape in and out, one MACC per element; same dtype too, except
Softmax's optional ``output_dtype`` (TFLite's int8 -> int16 SOFTMAX)."""
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
