"""QuantizeLinear / DequantizeLinear -> IR ops, parameters moved onto the quantized value.

ONNX passes scale and zero point as inputs; the IR keeps them on the quantized tensor as
:class:`~mcudeploy.ir.QuantParams` (``r = scale * (q - zero_point)``): on the output of
QuantizeLinear and on the input of DequantizeLinear. Both must be constants. A 1-D scale
with more than one element is per-axis along ``axis`` (default 1). The quantized dtype is
the zero point's (uint8 when it is omitted, or ``output_dtype`` from opset 21);
int8 / uint8 / int16 are supported. Blocked quantization (``block_size``) is refused.
"""
from __future__ import annotations

import numpy as np
import onnx

from ....ir import QuantParams
from ..context import ConversionContext
from .registry import converter

QUANTIZED_DTYPES = ("int8", "uint8", "int16")


def _zero_point_dtype(ctx: ConversionContext, node: onnx.NodeProto, attrs: dict,
                      zero_point: np.ndarray | None) -> str:
    if zero_point is not None:
        return zero_point.dtype.name
    output_dtype = attrs.get("output_dtype", 0)
    return onnx.helper.tensor_dtype_to_np_dtype(output_dtype).name if output_dtype else "uint8"


def quant_params(ctx: ConversionContext, node: onnx.NodeProto, rank: int) -> tuple[QuantParams, str]:
    """The node's constant scale / zero point as QuantParams, and the quantized dtype name."""
    attrs = ctx.attributes(node)
    if attrs.get("block_size", 0):
        raise ctx.unsupported(node, "blocked quantization (block_size) is not supported")
    scale = ctx.constant_input(node, 1, "scale")
    zero_point = ctx.constant_input(node, 2, "zero_point")
    if scale is None:
        raise ctx.invalid(node, "the scale input is missing")
    if scale.dtype != np.float32:
        raise ctx.unsupported(node, f"scale is {scale.dtype}; only float32 scales are supported")
    dtype = _zero_point_dtype(ctx, node, attrs, zero_point)
    if dtype not in QUANTIZED_DTYPES and node.op_type == "QuantizeLinear":
        raise ctx.unsupported(node, f"quantizing to {dtype} is not supported "
                              f"({', '.join(QUANTIZED_DTYPES)})")
    zero = np.zeros(scale.shape, np.int64) if zero_point is None else zero_point.astype(np.int64)
    axis = None
    if scale.size > 1:
        axis = attrs.get("axis", 1)
        if not -rank <= axis < rank:
            raise ctx.invalid(node, f"axis {axis} is out of range for rank {rank}")
        axis %= rank
    return QuantParams(scale.reshape(-1), zero.reshape(-1), axis), dtype


@converter("QuantizeLinear")
def convert_quantize_linear(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    params, dtype = quant_params(ctx, node, x.rank)
    output = ctx.emit("QuantizeLinear", [x], {"to": dtype}, node).outputs[0]
    output.quant = params
    output.layout = x.layout


@converter("DequantizeLinear")
def convert_dequantize_linear(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    params, _ = quant_params(ctx, node, x.rank)
    if x.quant is None:
        x.quant = params
    elif x.quant != params:
        if not x.is_constant:
            raise ctx.unsupported(node, f"its input {x.name!r} is already quantized with "
                                  f"{x.quant.describe()}, but this node dequantizes it with "
                                  f"{params.describe()}")
        assert x.const is not None  # is_constant, checked above
        x = ctx.graph.add_constant(x.name, x.const, quant=params)
    ctx.emit("DequantizeLinear", [x], None, node).outputs[0].layout = x.layout
