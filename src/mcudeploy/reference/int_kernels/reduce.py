"""Integer ReduceMax / ReduceMin (TFLite REDUCE_MAX / REDUCE_MIN), ReduceSum (SUM) and
ArgMax / ArgMin (ARG_MAX / ARG_MIN), TFLite Micro's arithmetic.

* ReduceMax / ReduceMin take the raw extreme; TFLM requires input and output to share
  scale and zero point (prepare refuses otherwise).
* ReduceSum is TFLM's ``QuantizedMeanOrSum`` without the division (the ReduceMean kernel
  of :mod:`.pool` with an undivided multiplier): ``m, s = quantize_multiplier(s_in / s_out)``,
  ``Y = clamp(mbqm(wrap32(sum(X) - zp_in * n), m, s) + zp_out, type range)``.
* ArgMax / ArgMin compare raw integers (any quantization); ties give the first index
  (TFLM; ``select_last_index`` the last); the result is int32 or int64.

Axes are shifted by one for the run's leading batch axis.
"""
from __future__ import annotations

import numpy as np

from ...arithmetic import fixed_point as fp
from ...errors import UnsupportedError
from ...ir import Node
from ..float_kernels.reduce import extreme_index
from ._common import need_dtype, per_tensor, where
from .pool import MeanParams, reduce_mean
from .registry import int_kernel, no_params


def _batch_axes(node: Node, x: np.ndarray) -> tuple[int, ...]:
    rank = x.ndim - 1
    return tuple(sorted(1 + a % rank for a in node.attrs["axes"]))


def prepare_extreme(node: Node) -> None:
    need_dtype(node, node.inputs[0], ("int8", "int16"), "input")
    if per_tensor(node, node.inputs[0], "input") != per_tensor(node, node.outputs[0], "output"):
        raise UnsupportedError(f"{where(node)}: input and output quantization differ; TFLite's "
                               f"integer {node.op} keeps the raw integers (requantize separately)")
    return None


def _extreme(node: Node, params, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    reduce = np.max if node.op == "ReduceMax" else np.min
    return [reduce(x, axis=_batch_axes(node, x), keepdims=bool(node.attrs["keepdims"]))]


int_kernel("ReduceMax", prepare=prepare_extreme)(_extreme)
int_kernel("ReduceMin", prepare=prepare_extreme)(_extreme)


def prepare_sum(node: Node) -> MeanParams:
    x, out = node.inputs[0], node.outputs[0]
    need_dtype(node, x, ("int8", "int16"), "input")
    need_dtype(node, out, (x.dtype.value,), "output")
    input_scale, input_zero_point = per_tensor(node, x, "input")
    output_scale, output_zero_point = per_tensor(node, out, "output")
    multiplier, shift = fp.quantize_multiplier(float(input_scale) / float(output_scale))
    axes = {a % x.rank for a in node.attrs["axes"]}
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    return MeanParams(input_zero_point, output_zero_point, multiplier, shift, count)


int_kernel("ReduceSum", prepare=prepare_sum)(reduce_mean)


def _arg(node: Node, params, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    return [extreme_index(node, x, 1 + node.attrs["axis"] % (x.ndim - 1))]


def prepare_arg(node: Node) -> None:
    need_dtype(node, node.inputs[0], ("int8", "int16"), "input")
    return no_params(node)


int_kernel("ArgMax", prepare=prepare_arg)(_arg)
int_kernel("ArgMin", prepare=prepare_arg)(_arg)
