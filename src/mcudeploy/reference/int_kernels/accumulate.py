"""Integer ConvAccumulate and RequantizeAccumulator (NHWC, int8 activations, int32 accumulator):
the pieces of an input-channel split Conv (:mod:`mcudeploy.ir.opdefs.accumulate`).

ConvAccumulate, over the input channels ``[b, b + C_g)``::

    A_out[o] = wrap32(A_in[o] + sum_{i, j, c < C_g} W[o, i, j, c] * (X[b + c] - zp_in))

RequantizeAccumulator, per output channel ``o`` (TFLite ``PopulateConvolutionQuantizationParams``)::

    multiplier[o], shift[o] = quantize_multiplier(double(s_in) * double(s_w[o]) / double(s_out))
    Y = clamp(mbqm(A[o], multiplier[o], shift[o]) + zp_out, min, max)

``wrap32`` is int32 addition modulo 2^32, a ring homomorphism: ``wrap32(wrap32(a) + b) =
wrap32(a + b)``, so the last accumulator is the unsplit Conv's ``wrap32(bias + sum)`` whatever
the groups, and the requantized output is bit-exact with :func:`.conv.conv`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import (
    activation_range,
    exact_float_dtype,
    fold_batch,
    grouped_products,
    need_dtype,
    offset_bound,
    pad_hw,
    per_tensor,
    requantize_and_clamp,
    unfold_batch,
    where,
    windows,
)
from .conv import _weight_scales
from .registry import int_kernel


@dataclass(frozen=True)
class AccumulateParams:
    input_offset: int            # -zp_in


@dataclass(frozen=True)
class AccumulatorParams:
    output_offset: int             # zp_out
    output_multiplier: np.ndarray  # int32 [O]
    output_shift: np.ndarray       # int32 [O], > 0 is a left shift
    activation_min: int
    activation_max: int
    input_offset: int = 0          # the accumulator has no offset (the C quant struct's field is 0)


def prepare_accumulate(node: Node) -> AccumulateParams:
    x, weights = node.inputs[0], node.inputs[1]
    need_dtype(node, x, ("int8",), "input")
    need_dtype(node, weights, ("int8",), "weights")
    _weight_scales(node)          # symmetric, per output channel
    accumulator = node.input(2)
    if accumulator is not None:
        need_dtype(node, accumulator, ("int32",), "accumulator")
    return AccumulateParams(-per_tensor(node, x, "input")[1])


@int_kernel("ConvAccumulate", prepare=prepare_accumulate)
def conv_accumulate(node: Node, params: AccumulateParams, inputs: list) -> list[np.ndarray]:
    x, weights, attrs = inputs[0], inputs[1][0], node.attrs
    begin, count = attrs["channel_begin"], weights.shape[3]
    depth = weights.shape[1] * weights.shape[2] * count
    dtype = exact_float_dtype(depth, offset_bound(x.dtype, params.input_offset), 128)
    if dtype is None:
        raise UnsupportedError(f"{where(node)}: {depth}-long dot products could overflow 2^53")
    channels = fold_batch(x)[..., begin:begin + count]
    shifted = channels.astype(dtype) + dtype.type(params.input_offset)    # padding then reads 0
    view = windows(pad_hw(shifted, attrs["pads"]), node.outputs[0].shape[1:3], weights.shape[1:3],
                   attrs["strides"], attrs["dilations"])
    sums = grouped_products(view, weights, 1, np.int64)
    previous = inputs[2] if len(inputs) > 2 else None
    if previous is not None and previous.ndim == 2:        # the bias [O] (a constant: batch 1)
        sums += previous[0].astype(np.int64)
    elif previous is not None:                             # the previous group's accumulator
        sums += fold_batch(previous).astype(np.int64)
    return [unfold_batch(fp.wrap_int32(sums).astype(np.int32), x.shape[0])]


def prepare_requantize_accumulator(node: Node) -> AccumulatorParams:
    accumulator, out = node.inputs[0], node.outputs[0]
    need_dtype(node, accumulator, ("int32",), "accumulator")
    need_dtype(node, out, ("int8",), "output")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    weight_scales = np.asarray(node.attrs["weight_scales"], dtype=np.float32).astype(np.float64)
    effective = np.float64(np.float32(node.attrs["input_scale"])) * weight_scales / np.float64(output_scale)
    effective = np.broadcast_to(effective, (accumulator.shape[3],))
    multipliers, shifts = fp.quantize_multipliers(effective)
    low, high = activation_range(node)
    return AccumulatorParams(output_zero_point, multipliers, shifts, low, high)


@int_kernel("RequantizeAccumulator", prepare=prepare_requantize_accumulator)
def requantize_accumulator(node: Node, params: AccumulatorParams, inputs: list) -> list[np.ndarray]:
    acc = inputs[0].astype(np.int64)
    return [requantize_and_clamp(acc, params.output_multiplier, params.output_shift, params.output_offset,
                                 params.activation_min, params.activation_max, np.dtype(np.int8),
                                 fits_int32=True)]
