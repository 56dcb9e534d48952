"""Binary elementwise ops with numpy broadcasting, and PRelu."""
from __future__ import annotations

from ..registry import TensorType, op
from ._common import ACTIVATION_ATTRS, broadcast, macc_per_output


def _binary(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if a.dtype != b.dtype:
        raise ValueError(f"operands have different dtypes: {a.type_str()} and {b.type_str()}")
    return [TensorType(a.dtype, broadcast(a.shape, b.shape))]


for _name, _doc in (("Add", "A + B"), ("Sub", "A - B"), ("Mul", "A * B"),
                    ("Div", "A / B (integer inputs: truncation toward zero, as ONNX)")):
    def _infer(inputs, attrs, _binary=_binary):
        return _binary(inputs, attrs)
    _infer.__doc__ = f"``Y = {_doc}`` with numpy broadcasting, then the fused clamp."
    op(_name, "elementwise", inputs=("A", "B"), attrs=ACTIVATION_ATTRS, macc=macc_per_output)(_infer)


@op("PRelu", "activation", inputs=("X", "slope"), macc=macc_per_output)
def prelu(inputs, attrs):
    """``Y = X if X >= 0 else slope * X``; ``slope`` broadcasts to X (unidirectionally)."""
    x, slope = inputs
    if broadcast(x.shape, slope.shape) != x.shape:
        raise ValueError(f"slope {slope.type_str()} does not broadcast to X {x.type_str()}")
    return [TensorType(x.dtype, x.shape)]
