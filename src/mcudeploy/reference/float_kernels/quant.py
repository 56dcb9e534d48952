"""QuantizeLinear and DequantizeLinear with the parameters stored on the values.

Quantize (output value's ``QuantParams``): ``Y = clip(round_half_even(X / scale) + zero_point,
dtype_min, dtype_max)``, with ``X / scale`` divided in float32 as onnxruntime does. An
integer input is first dequantized with the input value's parameters (requantization).
Dequantize (input value's parameters): ``Y = scale * (X - zero_point)`` in float32.
Per-axis parameters broadcast along their ``axis``.
"""
from __future__ import annotations

import numpy as np

from ...errors import GraphError
from ...ir import Node, QuantParams, Value
from ._common import output_dtype
from .registry import kernel


def _params(value: Value, node: Node) -> QuantParams:
    if value.quant is None:
        raise GraphError(f"node {node.name!r} ({node.op}): value {value.name!r} has no "
                         "quantization parameters; the importer or quantizer must set them")
    return value.quant


def quantize(real: np.ndarray, params: QuantParams, dtype: np.dtype,
             rounding: str = "half_to_even") -> np.ndarray:
    """``clip(round(real / scale) + zero_point)`` as ``dtype``; halves to even (ONNX) or,
    with ``rounding="half_away_from_zero"``, away from zero (TFLite)."""
    shape = params.broadcast_shape(real.ndim)
    scaled = np.divide(real.astype(np.float32, copy=False), params.scale.reshape(shape))
    rounded = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) if rounding == "half_away_from_zero"
               else np.rint(scaled))
    stored = rounded.astype(np.float64) + params.zero_point.reshape(shape)
    info = np.iinfo(dtype)
    return np.clip(stored, info.min, info.max).astype(dtype)


@kernel("QuantizeLinear")
def quantize_linear(node: Node, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    if not np.issubdtype(x.dtype, np.floating):
        x = _params(node.inputs[0], node).dequantize(x)
    return [quantize(x, _params(node.outputs[0], node), output_dtype(node), node.attrs["rounding"])]


@kernel("DequantizeLinear")
def dequantize_linear(node: Node, inputs: list) -> list[np.ndarray]:
    return [_params(node.inputs[0], node).dequantize(inputs[0])]
