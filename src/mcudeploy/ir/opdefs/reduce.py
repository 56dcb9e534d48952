"""Reductions over explicit axes (ReduceMax, ReduceMin, ReduceSum, ReduceProd, ReduceL1,
ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp; ArgMax / ArgMin; TopK; CumSum).
One MACC per input element.

``axes`` are explicit and non-negative after import (an ONNX "reduce everything" becomes
every axis); ``keepdims`` keeps reduced axes as size 1. ReduceMean lives in
:mod:`.pool` with the pooling ops.
"""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op
from ._common import macc_per_input, same_type

REDUCE_ATTRS = {"axes": Attr("ints"), "keepdims": Attr("int", 1, (0, 1))}


def reduced_shape(shape: tuple[int, ...], axes, keepdims: int) -> tuple[int, ...]:
    """The shape left after reducing ``axes`` (``ValueError`` when one is out of range)."""
    rank = len(shape)
    if any(not -rank <= a < max(rank, 1) for a in axes):
        raise ValueError(f"axes {list(axes)} out of range for rank {rank}")
    reduced = {a % rank for a in axes} if rank else set()
    if keepdims:
        return tuple(1 if i in reduced else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in reduced)


_REDUCTIONS = {
    "ReduceMax": "``max`` (TFLite REDUCE_MAX; quantized: raw integers, input and output share "
                 "scale and zero point, as TFLM requires)",
    "ReduceMin": "``min`` (TFLite REDUCE_MIN; quantized as ReduceMax)",
    "ReduceSum": "``sum`` (TFLite SUM; quantized: TFLM ``QuantizedMeanOrSum`` without the "
                 "division, ``Y = clamp(mbqm(wrap32(sum X - zp_in * n), s_in / s_out) + zp_out)``)",
    "ReduceProd": "``product``",
    "ReduceL1": "``sum(|X|)``",
    "ReduceL2": "``sqrt(sum(X^2))``",
    "ReduceSumSquare": "``sum(X^2)``",
    "ReduceLogSum": "``ln(sum(X))``",
    "ReduceLogSumExp": "``ln(sum(exp(X)))`` (computed as ``max + ln(sum(exp(X - max)))``)",
}

for _name, _formula in _REDUCTIONS.items():
    def _infer(inputs, attrs):
        return [TensorType(inputs[0].dtype,
                           reduced_shape(inputs[0].shape, attrs["axes"], attrs["keepdims"]))]
    _infer.__doc__ = f"``Y = {_formula}`` over ``axes``; ``keepdims`` keeps them as size 1."
    op(_name, "reduce", inputs=("X",), attrs=REDUCE_ATTRS, macc=macc_per_input)(_infer)

ARG_ATTRS = {"axis": Attr("int", 0), "keepdims": Attr("int", 1, (0, 1)),
             "select_last_index": Attr("int", 0, (0, 1)),
             "output_dtype": Attr("str", "int64", ("int64", "int32"))}


def _arg(inputs, attrs):
    shape = reduced_shape(inputs[0].shape, (attrs["axis"],), attrs["keepdims"])
    return [TensorType(DType(attrs["output_dtype"]), shape)]


@op("ArgMax", "reduce", inputs=("X",), attrs=ARG_ATTRS, macc=macc_per_input)
def arg_max(inputs, attrs):
    """Index of the maximum along ``axis`` (first one, or last with ``select_last_index``),
    as ``output_dtype`` (int64 in ONNX, int32 or int64 in TFLite ARG_MAX). Quantized: the raw
    integers are compared (TFLM ARG_MAX, int32 output)."""
    return _arg(inputs, attrs)


@op("ArgMin", "reduce", inputs=("X",), attrs=ARG_ATTRS, macc=macc_per_input)
def arg_min(inputs, attrs):
    """Index of the minimum along ``axis``, as ArgMax."""
    return _arg(inputs, attrs)


@op("TopK", "reduce", inputs=("X",), macc=macc_per_input, outputs=2,
    attrs={"k": Attr("int"), "axis": Attr("int", -1), "largest": Attr("int", 1, (0, 1)),
           "sorted": Attr("int", 1, (0, 1))})
def top_k(inputs, attrs):
    """The ``k`` largest (``largest=1``) or smallest elements along ``axis``, sorted, and
    their int64 indices; equal values keep the lower index first (ONNX TopK)."""
    x = inputs[0]
    shape = list(x.shape)
    axis = attrs["axis"] % x.rank if x.rank else 0
    if not 1 <= attrs["k"] <= shape[axis]:
        raise ValueError(f"k={attrs['k']} is not in 1..{shape[axis]} (axis {axis} of {x.type_str()})")
    shape[axis] = attrs["k"]
    return [TensorType(x.dtype, tuple(shape)), TensorType(DType.INT64, tuple(shape))]


@op("CumSum", "reduce", inputs=("X",), macc=macc_per_input,
    attrs={"axis": Attr("int"), "exclusive": Attr("int", 0, (0, 1)),
           "reverse": Attr("int", 0, (0, 1))})
def cum_sum(inputs, attrs):
    """Running sum along ``axis``; ``exclusive`` leaves out the element itself, ``reverse``
    sums from the end."""
    reduced_shape(inputs[0].shape, (attrs["axis"],), 1)
    return same_type(inputs)
