"""Quantize / dequantize. The parameters live on the values (``Value.quant``), not in attributes."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_output


@op("QuantizeLinear", "quant", inputs=("X",), macc=macc_per_output,
    attrs={"to": Attr("str", "int8", ("int8", "uint8", "int16", "int32"))})
def quantize_linear(inputs, attrs):
    """Float input: ``Y = saturate(round_half_even(X / scale) + zero_point)`` with the output
    value's QuantParams (ONNX QuantizeLinear). Integer input: requantize from the input's
    QuantParams to the output's (TFLite QUANTIZE between two quantized types; ``to="int32"``
    occurs in int16 models, e.g. int16 -> int32 and back)."""
    return [TensorType(DType(attrs["to"]), inputs[0].shape)]


@op("DequantizeLinear", "quant", inputs=("X",), macc=macc_per_output)
def dequantize_linear(inputs, attrs):
    """``Y = scale * (X - zero_point)`` as float32, with the input value's QuantParams."""
    return [TensorType(DType.FLOAT32, inputs[0].shape)]
