"""Integer Conv (regular, grouped, depthwise) and ConvTranspose, NHWC, TFLite int8 and 16x8.

Prepare (TFLite ``PopulateConvolutionQuantizationParams``), per output channel ``o``::

    multiplier[o], shift[o] = quantize_multiplier(double(s_in) * double(s_w[o]) / double(s_out))
    activation [min, max]   = the fused clamp quantized with the output's scale / zero point

Eval, int8 (int32 accumulator)::

    acc[o] = bias[o] + sum W[o, i, j, c] * (X[c] - zp_in)       (padding reads zp_in)
    Y      = clamp(mbqm(acc, multiplier[o], shift[o]) + zp_out, min, max)

16x8 (int16 activations, zero points 0): ``acc = bias + sum W * X``; with an int64 bias (or
none) the accumulator is int64 and requantized by the reduced-multiplier int64 form, with
an int32 bias by the int32 form (TFLM ``ConvPerChannel<AccumScalar>``); no offsets.

ConvTranspose scatters ``(X - zp_in) * W`` of every input pixel into a scratch accumulator
(int32, or int64 for 16x8 which always uses the int64 form), crops ``pads``, then adds the
bias and requantizes the same way (TFLM ``TransposeConv``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import (
    activation_range,
    exact_dot,
    exact_float_dtype,
    fold_batch,
    grouped_products,
    need_dtype,
    need_zero_point,
    offset_bound,
    pad_hw,
    per_tensor,
    requantize_and_clamp,
    unfold_batch,
    where,
    windows,
)
from .registry import int_kernel


@dataclass(frozen=True)
class ConvParams:
    """Prepared parameters of an integer convolution."""
    input_offset: int            # -zp_in (0 for int16)
    output_offset: int           # zp_out (0 for int16)
    output_multiplier: np.ndarray  # int32 [O]
    output_shift: np.ndarray       # int32 [O], > 0 is a left shift
    activation_min: int
    activation_max: int
    int64_accumulator: bool      # 16x8 with int64 bias: reduced-multiplier requantization


def _weight_scales(node: Node) -> np.ndarray:
    weights = node.inputs[1]
    quant = weights.quant
    out_channels = weights.shape[0]
    if quant is None:
        raise UnsupportedError(f"{where(node)}: weights {weights.name!r} are not quantized; the "
                               "integer reference needs int8 weights with scales")
    if quant.axis is not None and (quant.axis % weights.rank != 0 or quant.scale.size != out_channels):
        raise UnsupportedError(f"{where(node)}: weights {weights.name!r} are quantized along axis "
                               f"{quant.axis}; the integer kernel needs per-output-channel (axis 0)")
    if np.any(quant.zero_point != 0):
        raise UnsupportedError(f"{where(node)}: weights {weights.name!r} have non-zero zero points; "
                               "TFLite's integer convolutions need symmetric weights")
    return np.broadcast_to(quant.scale, (out_channels,))


def prepare_conv(node: Node) -> ConvParams:
    x, weights, out = node.inputs[0], node.inputs[1], node.outputs[0]
    if node.attrs["layout"] != "NHWC":
        raise UnsupportedError(f"{where(node)}: the integer reference runs NHWC convolutions; "
                               "run the to_nhwc pass first")
    kind = need_dtype(node, x, ("int8", "int16"), "input")
    need_dtype(node, weights, ("int8",), "weights")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    effective = (np.float64(input_scale) * _weight_scales(node).astype(np.float64)
                 / np.float64(output_scale))
    multipliers, shifts = fp.quantize_multipliers(effective)
    bias = node.input(2)
    int64_accumulator = False
    if kind == "int16":
        need_zero_point(node, x, input_zero_point, 0, "int16 input")
        need_zero_point(node, out, output_zero_point, 0, "int16 output")
        int64_accumulator = node.op == "ConvTranspose" or bias is None or bias.dtype.value == "int64"
    elif bias is not None:
        need_dtype(node, bias, ("int32",), "bias")
    low, high = activation_range(node)
    return ConvParams(-input_zero_point, output_zero_point, multipliers, shifts, low, high,
                      int64_accumulator)


def _finish(acc: np.ndarray, bias: np.ndarray | None, params: ConvParams, dtype,
            bound: int) -> np.ndarray:
    """Bias, requantization and clamp of the int64 sums ``acc`` (``|sums| <= bound``;
    ``acc`` is consumed)."""
    if bias is not None:
        acc += bias.reshape(-1).astype(np.int64)
        bound += int(np.abs(bias).max(initial=0))
    return requantize_and_clamp(acc, params.output_multiplier, params.output_shift,
                                params.output_offset, params.activation_min, params.activation_max,
                                dtype, int64_accumulator=params.int64_accumulator,
                                fits_int32=bound <= fp.INT32_MAX)


def _depthwise_sums(view: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``view`` [N, OH, OW, kH, kW, C] (exact float), weights [C*M, kH, kW, 1]: channel
    ``c*M + m`` reads ``c``; one multiply-add per tap in the view's float dtype."""
    n, oh, ow, kh, kw, channels = view.shape
    multiplier = weights.shape[0] // channels
    taps = weights[..., 0].astype(view.dtype).reshape(channels, multiplier, kh, kw)
    shape = (n, oh, ow, channels) if multiplier == 1 else (n, oh, ow, channels, multiplier)
    acc = np.zeros(shape, dtype=view.dtype)
    for i in range(kh):
        for j in range(kw):
            if multiplier == 1:
                acc += view[:, :, :, i, j, :] * taps[:, 0, i, j]
            else:
                acc += view[:, :, :, i, j, :, None] * taps[:, :, i, j]
    return acc.reshape(n, oh, ow, channels * multiplier).astype(np.int64)


@int_kernel("Conv", prepare=prepare_conv)
def conv(node: Node, params: ConvParams, inputs: list) -> list[np.ndarray]:
    x, weights = inputs[0], inputs[1][0]
    bias = inputs[2][0] if len(inputs) > 2 and inputs[2] is not None else None
    batch, attrs = x.shape[0], node.attrs
    depthwise = weights.shape[3] == 1 and attrs["group"] == x.shape[-1] and attrs["group"] > 1
    depth = weights.shape[1] * weights.shape[2] * (1 if depthwise else weights.shape[3])
    dtype = exact_float_dtype(depth, offset_bound(x.dtype, params.input_offset), 128)
    if dtype is None:
        raise UnsupportedError(f"{where(node)}: {depth}-long dot products could overflow 2^53")
    # (X - zp_in) as exact small floats; padding then reads 0 = zp_in - zp_in
    shifted = fold_batch(x).astype(dtype) + dtype.type(params.input_offset)
    view = windows(pad_hw(shifted, attrs["pads"]), node.outputs[0].shape[1:3], weights.shape[1:3],
                   attrs["strides"], attrs["dilations"])
    acc = _depthwise_sums(view, weights) if depthwise else grouped_products(view, weights, attrs["group"], np.int64)
    bound = depth * offset_bound(x.dtype, params.input_offset) * 128
    return [unfold_batch(_finish(acc, bias, params, node.outputs[0].dtype.numpy, bound), batch)]


def _scatter_sums(x: np.ndarray, weights: np.ndarray, node: Node) -> np.ndarray:
    """Full (uncropped) transpose-conv sums ``[N, FH, FW, O]`` (exact int64)."""
    n, height, width, channels = x.shape
    out_channels, kh, kw, per_in = weights.shape
    group = node.attrs["group"]
    (sh, sw), (dh, dw) = node.attrs["strides"], node.attrs["dilations"]
    full_h, full_w = (height - 1) * sh + (kh - 1) * dh + 1, (width - 1) * sw + (kw - 1) * dw + 1
    full = np.zeros((n, full_h, full_w, out_channels), dtype=np.int64)
    bound = int(np.abs(x).max(initial=0))
    per_out = out_channels // group
    for g in range(group):
        columns = x[..., g * per_in:(g + 1) * per_in].reshape(-1, per_in)
        for i in range(kh):
            for j in range(kw):
                taps = weights[g * per_out:(g + 1) * per_out, i, j, :]  # [O/g, C/g]
                contribution = exact_dot(columns, taps.T, bound, 128).reshape(n, height, width, per_out)
                full[:, i * dh:i * dh + (height - 1) * sh + 1:sh,
                     j * dw:j * dw + (width - 1) * sw + 1:sw,
                     g * per_out:(g + 1) * per_out] += contribution
    return full


@int_kernel("ConvTranspose", prepare=prepare_conv)
def conv_transpose(node: Node, params: ConvParams, inputs: list) -> list[np.ndarray]:
    if node.attrs["layout"] != "NHWC":
        raise UnsupportedError(f"{where(node)}: the integer reference runs NHWC ConvTranspose only")
    x, weights = inputs[0], inputs[1][0]
    bias = inputs[2][0] if len(inputs) > 2 and inputs[2] is not None else None
    batch = x.shape[0]
    shifted = fold_batch(x).astype(np.int64) + params.input_offset
    full = _scatter_sums(shifted, weights.astype(np.int64), node)
    top, left = node.attrs["pads"][0], node.attrs["pads"][1]
    out_h, out_w = node.outputs[0].shape[1:3]
    grown = np.zeros((full.shape[0], max(full.shape[1], top + out_h), max(full.shape[2], left + out_w),
                      full.shape[3]), dtype=np.int64)
    grown[:, :full.shape[1], :full.shape[2]] = full
    acc = np.ascontiguousarray(grown[:, top:top + out_h, left:left + out_w])
    return [unfold_batch(_finish(acc, bias, params, node.outputs[0].dtype.numpy, 2**62), batch)]
