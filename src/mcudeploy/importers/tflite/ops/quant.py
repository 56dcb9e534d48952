"""QUANTIZE -> QuantizeLinear (float -> int, or int -> int requantization) with attribute
``to`` = the output dtype; DEQUANTIZE -> DequantizeLinear.

A DEQUANTIZE of a float16 *constant* (a "float16-weight" model) is only a cast: it is
replaced by a float32 constant holding the same values (exact: every float16 is a float32).
"""
from __future__ import annotations

import numpy as np

from ....ir import DType, Value
from ..common import converter
from ..context import ConversionContext
from ..tensors import constant_array, ir_dtype

QUANTIZED_OUTPUTS = ("int8", "uint8", "int16", "int32")


@converter("QUANTIZE")
def quantize(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    dtype, quant = ctx.output_dtype(), ctx.output_quant()
    if dtype.value not in QUANTIZED_OUTPUTS or quant is None:
        raise ctx.unsupported(f"output {dtype} must be a quantized "
                              f"{'/'.join(QUANTIZED_OUTPUTS)} tensor with a scale and zero point")
    if x.dtype.is_integer and x.quant is None:
        raise ctx.unsupported(f"integer input {x.name!r} has no quantization parameters")
    ctx.add_node("QuantizeLinear", [x], {"to": dtype.value, "rounding": "half_away_from_zero"})


@converter("DEQUANTIZE")
def dequantize(ctx: ConversionContext) -> None:
    tensor = ctx.tensor(0)
    if tensor is not None and ir_dtype(ctx.path, tensor) == DType.FLOAT16:
        array = None if tensor.index in ctx.values else constant_array(ctx.path, ctx.model, tensor)
        if array is None:
            raise ctx.unsupported("dequantizing a computed float16 tensor (float16 activations) "
                                  "is not supported; convert the model with float32 activations")
        name = ctx.graph.unique_name(ctx.tensor_name(ctx.output_tensor(0)))
        ctx.bind(0, Value.constant(name, array.astype(np.float32)))
        ctx.float16_weights.append(name)
        return
    x = ctx.require_input(0, "input")
    if x.quant is None:
        raise ctx.unsupported(f"input {x.type_str()} has no quantization parameters")
    ctx.add_node("DequantizeLinear", [x])
