"""Indexing ops: Gather, GatherElements, GatherND, ScatterElements, ScatterND, OneHot.
The output shape depends only on the input shapes and attributes (never on index values),
so indices may be computed at run time. Negative indices count from the end of their
axis. Zero MACC (data movement)."""
from __future__ import annotations

from ..dtypes import DType
from ..registry import Attr, TensorType, op

INDEX_DTYPES = (DType.INT32, DType.INT64)


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what} axis {axis} out of range for rank {rank}")
    return axis % rank


def _need_indices(value, what: str = "indices") -> None:
    if value.dtype not in INDEX_DTYPES:
        raise ValueError(f"{what} must be int32 or int64, got {value.type_str()}")


@op("Gather", "shape", inputs=("X", "indices"), attrs={"axis": Attr("int", 0)})
def gather(inputs, attrs):
    """``Y[i..., j..., k...] = X[i..., indices[j...], k...]`` along ``axis``:
    ``Y.shape = X.shape[:axis] + indices.shape + X.shape[axis+1:]`` (ONNX Gather, TFLite
    GATHER with batch_dims 0). Quantized: raw integers are copied (TFLM GATHER)."""
    x, indices = inputs
    _need_indices(indices)
    axis = _axis(attrs["axis"], x.rank, "Gather")
    return [TensorType(x.dtype, x.shape[:axis] + indices.shape + x.shape[axis + 1:])]


@op("GatherElements", "shape", inputs=("X", "indices"), attrs={"axis": Attr("int", 0)})
def gather_elements(inputs, attrs):
    """``Y[p] = X[p with its axis coordinate replaced by indices[p]]``; Y has the
    shape of ``indices`` (numpy ``take_along_axis``)."""
    x, indices = inputs
    _need_indices(indices)
    _axis(attrs["axis"], x.rank, "GatherElements")
    if indices.rank != x.rank:
        raise ValueError(f"indices {indices.type_str()} must have the rank of X {x.type_str()}")
    return [TensorType(x.dtype, indices.shape)]


@op("GatherND", "shape", inputs=("X", "indices"), attrs={"batch_dims": Attr("int", 0)})
def gather_nd(inputs, attrs):
    """Slices of X addressed by the last axis of ``indices`` (ONNX GatherND): with
    ``b = batch_dims`` and ``m = indices.shape[-1]``, ``Y.shape = indices.shape[:-1] +
    X.shape[b + m:]``."""
    x, indices = inputs
    _need_indices(indices)
    batch, depth = attrs["batch_dims"], indices.shape[-1] if indices.rank else 0
    if indices.rank < 1 or batch + depth > x.rank or x.shape[:batch] != indices.shape[:batch]:
        raise ValueError(f"indices {indices.type_str()} do not address X {x.type_str()} "
                         f"with batch_dims {batch}")
    return [TensorType(x.dtype, indices.shape[:-1] + x.shape[batch + depth:])]


REDUCTIONS = ("none", "add", "mul", "max", "min")


@op("ScatterElements", "shape", inputs=("X", "indices", "updates"),
    attrs={"axis": Attr("int", 0), "reduction": Attr("str", "none", REDUCTIONS)})
def scatter_elements(inputs, attrs):
    """``Y = X`` with ``Y[p with axis coordinate indices[p]] (op)= updates[p]`` for every
    position p of ``indices`` (in order; ``reduction`` none overwrites)."""
    x, indices, updates = inputs
    _need_indices(indices)
    _axis(attrs["axis"], x.rank, "ScatterElements")
    if indices.shape != updates.shape or indices.rank != x.rank:
        raise ValueError(f"indices {indices.type_str()} and updates {updates.type_str()} must "
                         f"have one shape, of the rank of X {x.type_str()}")
    return [TensorType(x.dtype, x.shape)]


@op("ScatterND", "shape", inputs=("X", "indices", "updates"),
    attrs={"reduction": Attr("str", "none", REDUCTIONS)})
def scatter_nd(inputs, attrs):
    """``Y = X`` with the slices ``Y[indices[j...]]`` (op)= ``updates[j...]`` (ONNX ScatterND)."""
    x, indices, updates = inputs
    _need_indices(indices)
    depth = indices.shape[-1] if indices.rank else 0
    if indices.rank < 1 or depth > x.rank or updates.shape != indices.shape[:-1] + x.shape[depth:]:
        raise ValueError(f"updates {updates.type_str()} do not match indices "
                         f"{indices.type_str()} into X {x.type_str()}")
    return [TensorType(x.dtype, x.shape)]


@op("OneHot", "shape", inputs=("indices", "values"),
    attrs={"depth": Attr("int"), "axis": Attr("int", -1)})
def one_hot(inputs, attrs):
    """``Y`` has a new axis of size ``depth`` at ``axis``: ``values[1]`` where the position
    equals the index (negative indices count from ``depth``), ``values[0]`` elsewhere."""
    indices, values = inputs
    rank = indices.rank + 1
    axis = _axis(attrs["axis"], rank, "OneHot")
    if values.shape != (2,) or attrs["depth"] <= 0:
        raise ValueError(f"values must be [2] and depth positive, got {values.type_str()}, "
                         f"depth {attrs['depth']}")
    return [TensorType(values.dtype, indices.shape[:axis] + (attrs["depth"],) + indices.shape[axis:])]
