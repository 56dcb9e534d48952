"""Integer Gemm = TFLite FULLY_CONNECTED (``transB = 1``, weights ``[N, K]``), int8 and 16x8.

Prepare (TFLM ``CalculateOpDataFullyConnected``)::

    real[n] = double(s_in) * double(s_w[n]) / double(s_out)      (s_w[n] = s_w if per tensor)
    multiplier, shift = quantize_multiplier(real)

(TFLite's ``GetQuantizedConvolutionMultipler`` at tflite-micro commit 90b983c2 multiplies
``s_in * s_w`` in float32 first; the installed TFLM wheel, 0.dev20261023, computes the
product in double: fc_autoencoder_int8 differs in 2 of 128,000 outputs with the float32
product and matches exactly with the double one.)

Eval::

    acc[m, n] = bias[n] + sum_k (W[n, k] - zp_w) * (X[m, k] - zp_in)
    Y[m, n]   = clamp(mbqm(acc, multiplier[n], shift[n]) + zp_out, min, max)

``zp_w`` is used only with per-tensor weights (TFLM's per-channel path ignores it). 16x8
with an int64 bias (or none) accumulates in int64 and requantizes with the reduced-multiplier
int64 form; with an int32 bias in int32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ._common import activation_range, exact_dot, need_dtype, offset_bound, per_tensor, requantize_and_clamp, where
from .registry import int_kernel


@dataclass(frozen=True)
class FullyConnectedParams:
    """Prepared parameters of an integer fully connected layer."""
    input_offset: int
    weights_offset: int
    output_offset: int
    output_multiplier: np.ndarray  # int32 [N] (one value repeated for per-tensor weights)
    output_shift: np.ndarray
    activation_min: int
    activation_max: int
    int64_accumulator: bool


def _multipliers(node: Node, input_scale: np.float32, output_scale: np.float32):
    weights = node.inputs[1]
    quant = weights.quant
    units = weights.shape[0]
    if quant is None:
        raise UnsupportedError(f"{where(node)}: weights {weights.name!r} are not quantized")
    if quant.scale.size == 1:
        real = np.full(units, np.float64(input_scale) * np.float64(quant.scale[0])
                       / np.float64(output_scale))
        return fp.quantize_multipliers(real), -int(quant.zero_point[0])
    assert quant.axis is not None  # several scales: per-channel (QuantParams checks it)
    if quant.axis % weights.rank != 0:
        raise UnsupportedError(f"{where(node)}: weights are quantized along axis {quant.axis}; "
                               "FULLY_CONNECTED needs per-output-unit scales (axis 0 of [N, K])")
    real = np.float64(input_scale) * quant.scale.astype(np.float64) / np.float64(output_scale)
    return fp.quantize_multipliers(real), 0


def prepare_gemm(node: Node) -> FullyConnectedParams:
    attrs = node.attrs
    if attrs["transA"] or not attrs["transB"] or attrs["alpha"] != 1.0 or attrs["beta"] != 1.0:
        raise UnsupportedError(f"{where(node)}: the integer Gemm is TFLite FULLY_CONNECTED: "
                               "transA=0, transB=1, alpha=beta=1")
    x, out, bias = node.inputs[0], node.outputs[0], node.input(2)
    kind = need_dtype(node, x, ("int8", "int16"), "input")
    need_dtype(node, node.inputs[1], ("int8",), "weights")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    (multipliers, shifts), weights_offset = _multipliers(node, input_scale, output_scale)
    int64_accumulator = kind == "int16" and (bias is None or bias.dtype.value == "int64")
    low, high = activation_range(node)
    return FullyConnectedParams(-input_zero_point, weights_offset, output_zero_point,
                                multipliers, shifts, low, high, int64_accumulator)


@int_kernel("Gemm", prepare=prepare_gemm)
def gemm(node: Node, params: FullyConnectedParams, inputs: list) -> list[np.ndarray]:
    x, weights = inputs[0], inputs[1][0]
    bias = inputs[2] if len(inputs) > 2 and inputs[2] is not None else None
    shifted_input = x.astype(np.int64) + params.input_offset
    shifted_weights = weights.astype(np.int64) + params.weights_offset
    acc = exact_dot(shifted_input, shifted_weights.T, offset_bound(x.dtype, params.input_offset),
                    offset_bound(weights.dtype, params.weights_offset))
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    return [requantize_and_clamp(acc, params.output_multiplier, params.output_shift,
                                 params.output_offset, params.activation_min, params.activation_max,
                                 node.outputs[0].dtype.numpy,
                                 int64_accumulator=params.int64_accumulator)]
