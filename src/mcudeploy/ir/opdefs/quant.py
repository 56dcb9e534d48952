"""Quantize / dequantize. The parameters live on the values (``Value.quant``), not in attributes."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_output


@op("QuantizeLinear", "quant", inputs=("X",), macc=macc_per_output,
    attrs={"to": Attr("str", "int8", ("int8", "uint8", "int16", "int32")),
           "rounding": Attr("str", "half_to_even", ("half_to_even", "half_away_from_zero"))})
def quantize_linear(inputs, attrs):
    """Float input: ``Y = saturate(round(X / scale) + zero_point)`` with the output value's
    QuantParams; ``round`` is ``rounding``: half to even as ONNX QuantizeLinear specifies
    (the default), or half away from zero as TFLite / TFLite Micro QUANTIZE computes it (the
    TFLite importer sets this, so that imported models stay bit-exact). Integer input: requantize from the input's
    QuantParams to the output's (TFLite QUANTIZE between two quantized types; ``to="int32"``
    occurs in int16 models, e.g. int16 -> int32 and back)."""
    return [TensorType(DType(attrs["to"]), inputs[0].shape)]


@op("DequantizeLinear", "quant", inputs=("X",), macc=macc_per_output)
def dequantize_linear(inputs, attrs):
    """``Y = scale * (X - zero_point)`` as float32, with the input value's QuantParams."""
    return [TensorType(DType.FLOAT32, inputs[0].shape)]
