"""Reductions (ReduceMax ... ReduceLogSumExp), ArgMax / ArgMin, TopK and CumSum.

Sums and products run in float64 (int64 for integers) and round once to the output dtype.
ReduceLogSumExp is ``max + ln(sum(exp(X - max)))`` (no overflow). ArgMax / ArgMin take the
first extreme index, or the last with ``select_last_index`` (searched on the reversed
axis). TopK sorts stably, so equal values keep the lower index first.
"""
from __future__ import annotations

import numpy as np

from ...ir import Node
from ._common import output_dtype, wide
from .registry import kernel


def _log_sum_exp(x: np.ndarray, axes: tuple, keepdims: bool) -> np.ndarray:
    peak = np.max(x, axis=axes, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    result = np.log(np.sum(np.exp(x - peak), axis=axes, keepdims=True)) + peak
    return result if keepdims else np.squeeze(result, axis=axes)


_REDUCTIONS = {
    "ReduceMax": lambda x, axes, keep: np.max(x, axis=axes, keepdims=keep),
    "ReduceMin": lambda x, axes, keep: np.min(x, axis=axes, keepdims=keep),
    "ReduceSum": lambda x, axes, keep: np.sum(x, axis=axes, keepdims=keep),
    "ReduceProd": lambda x, axes, keep: np.prod(x, axis=axes, keepdims=keep),
    "ReduceL1": lambda x, axes, keep: np.sum(np.abs(x), axis=axes, keepdims=keep),
    "ReduceL2": lambda x, axes, keep: np.sqrt(np.sum(x * x, axis=axes, keepdims=keep)),
    "ReduceSumSquare": lambda x, axes, keep: np.sum(x * x, axis=axes, keepdims=keep),
    "ReduceLogSum": lambda x, axes, keep: np.log(np.sum(x, axis=axes, keepdims=keep)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reduce(node: Node, inputs: list) -> list[np.ndarray]:
    x = inputs[0]
    axes = tuple(sorted({a % x.ndim for a in node.attrs["axes"]})) if x.ndim else ()
    values = x if node.op in ("ReduceMax", "ReduceMin") else wide(x)
    with np.errstate(all="ignore"):
        result = _REDUCTIONS[node.op](values, axes, bool(node.attrs["keepdims"]))
    return [np.asarray(result).astype(output_dtype(node), copy=False)]


for _op_name in _REDUCTIONS:
    kernel(_op_name)(_reduce)


def extreme_index(node: Node, x: np.ndarray, axis: int) -> np.ndarray:
    """ArgMax / ArgMin of ``x`` along ``axis`` as the node's attributes say (first or last
    extreme, axis kept or dropped), in the output dtype (shared with the integer kernel)."""
    pick = np.argmax if node.op == "ArgMax" else np.argmin
    if node.attrs["select_last_index"]:
        index = x.shape[axis] - 1 - pick(np.flip(x, axis=axis), axis=axis)
    else:
        index = pick(x, axis=axis)
    if node.attrs["keepdims"]:
        index = np.expand_dims(index, axis)
    return np.asarray(index).astype(output_dtype(node))


@kernel("ArgMax")
@kernel("ArgMin")
def arg_extreme(node: Node, inputs: list) -> list[np.ndarray]:
    return [extreme_index(node, inputs[0], node.attrs["axis"] % max(inputs[0].ndim, 1))]


@kernel("TopK")
def top_k(node: Node, inputs: list) -> list[np.ndarray]:
    x, k = inputs[0], node.attrs["k"]
    axis = node.attrs["axis"] % x.ndim
    keys = -x.astype(np.float64) if node.attrs["largest"] else x
    order = np.argsort(keys, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, indices, axis=axis), indices.astype(np.int64)]


@kernel("CumSum")
def cum_sum(node: Node, inputs: list) -> list[np.ndarray]:
    x, axis = wide(inputs[0]), node.attrs["axis"] % inputs[0].ndim
    if node.attrs["reverse"]:
        x = np.flip(x, axis=axis)
    total = np.cumsum(x, axis=axis)
    if node.attrs["exclusive"]:
        total = total - x
    if node.attrs["reverse"]:
        total = np.flip(total, axis=axis)
    return [total.astype(output_dtype(node))]
