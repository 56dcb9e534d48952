"""Data-movement ops: they change shape or order, never values. Zero MACC.

Every shape-determining operand is a static attribute: importers resolve ONNX's shape /
axes / pads inputs (and ``-1`` / ``0`` in Reshape) to constants or refuse the model.
"""
from __future__ import annotations

import math

from ..registry import Attr, TensorType, op
from ._common import LAYOUT_ATTR, channel_axis, need_rank, same_type, spatial_axes


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{what} axis {axis} out of range for rank {rank}")
    return axis % rank


@op("Identity", "shape", inputs=("X",))
def identity(inputs, attrs):
    """``Y = X``."""
    return same_type(inputs)


@op("Dropout", "shape", inputs=("X",), attrs={"ratio": Attr("float", 0.5)})
def dropout(inputs, attrs):
    """Inference-time Dropout: ``Y = X`` (the mask output is not supported)."""
    return same_type(inputs)


@op("Reshape", "shape", inputs=("X",), attrs={"shape": Attr("ints")})
def reshape(inputs, attrs):
    """Same elements in row-major order, new static ``shape`` (no -1 / 0 left)."""
    x, shape = inputs[0], attrs["shape"]
    if any(d <= 0 for d in shape) or math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape {x.type_str()} ({x.size} elements) to {list(shape)}")
    return [TensorType(x.dtype, shape)]


@op("Flatten", "shape", inputs=("X",), attrs={"axis": Attr("int", 1)})
def flatten(inputs, attrs):
    """Reshape to 2-D ``[prod(shape[:axis]), prod(shape[axis:])]``."""
    x = inputs[0]
    axis = attrs["axis"] % (x.rank + 1) if x.rank else 0
    return [TensorType(x.dtype, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))]


@op("Squeeze", "shape", inputs=("X",), attrs={"axes": Attr("ints")})
def squeeze(inputs, attrs):
    """Drop the listed size-1 axes."""
    x = inputs[0]
    axes = {_axis(a, x.rank, "Squeeze") for a in attrs["axes"]}
    if any(x.shape[a] != 1 for a in axes):
        raise ValueError(f"cannot squeeze axes {sorted(axes)} of {x.type_str()}: not all size 1")
    return [TensorType(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]


@op("Unsqueeze", "shape", inputs=("X",), attrs={"axes": Attr("ints")})
def unsqueeze(inputs, attrs):
    """Insert size-1 axes at the listed positions of the output."""
    x = inputs[0]
    rank = x.rank + len(attrs["axes"])
    axes = {_axis(a, rank, "Unsqueeze") for a in attrs["axes"]}
    dims = iter(x.shape)
    return [TensorType(x.dtype, tuple(1 if i in axes else next(dims) for i in range(rank)))]


@op("Transpose", "shape", inputs=("X",), attrs={"perm": Attr("ints")})
def transpose(inputs, attrs):
    """``Y.shape[i] = X.shape[perm[i]]``."""
    x, perm = inputs[0], attrs["perm"]
    if sorted(perm) != list(range(x.rank)):
        raise ValueError(f"perm {list(perm)} is not a permutation of {x.rank} axes")
    return [TensorType(x.dtype, tuple(x.shape[p] for p in perm))]


@op("Concat", "shape", inputs=("inputs*",), attrs={"axis": Attr("int")})
def concat(inputs, attrs):
    """Join the inputs along ``axis``; other dimensions must match."""
    first = inputs[0]
    axis = _axis(attrs["axis"], first.rank, "Concat")
    total = 0
    for value in inputs:
        if value.rank != first.rank or any(a != b for i, (a, b) in
                                           enumerate(zip(value.shape, first.shape)) if i != axis):
            raise ValueError(f"Concat inputs {first.type_str()} and {value.type_str()} differ "
                             f"outside axis {axis}")
        if value.dtype != first.dtype:
            raise ValueError(f"Concat inputs have different dtypes: {first.dtype} and {value.dtype}")
        total += value.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    return [TensorType(first.dtype, tuple(shape))]


@op("Split", "shape", inputs=("X",), attrs={"axis": Attr("int", 0), "split": Attr("ints")},
    outputs=None)
def split(inputs, attrs):
    """Cut X along ``axis`` into pieces of the given sizes (one output each)."""
    x = inputs[0]
    axis = _axis(attrs["axis"], x.rank, "Split")
    if sum(attrs["split"]) != x.shape[axis] or any(s < 0 for s in attrs["split"]):
        raise ValueError(f"split sizes {list(attrs['split'])} do not add up to "
                         f"{x.shape[axis]} (axis {axis} of {x.type_str()})")
    out = []
    for size in attrs["split"]:
        shape = list(x.shape)
        shape[axis] = size
        out.append(TensorType(x.dtype, tuple(shape)))
    return out


def slice_indices(dim: int, start: int, end: int, step: int) -> range:
    """The indices ONNX Slice takes along one axis (negative values count from the end,
    out-of-range values clamp)."""
    return range(dim)[slice(start, end, step)]


@op("Slice", "shape", inputs=("X",),
    attrs={"starts": Attr("ints"), "ends": Attr("ints"), "axes": Attr("ints"),
           "steps": Attr("ints")})
def slice_(inputs, attrs):
    """ONNX Slice with static starts / ends / axes / steps (TFLite STRIDED_SLICE after the
    importer resolves its masks)."""
    x = inputs[0]
    starts, ends, axes, steps = (attrs[k] for k in ("starts", "ends", "axes", "steps"))
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("starts, ends, axes and steps must have the same length")
    if any(s == 0 for s in steps):
        raise ValueError("a slice step cannot be 0")
    shape = list(x.shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, x.rank, "Slice")
        shape[axis] = len(slice_indices(x.shape[axis], start, end, step))
    if any(d == 0 for d in shape):
        raise ValueError(f"slice of {x.type_str()} is empty: {shape}")
    return [TensorType(x.dtype, tuple(shape))]


@op("Pad", "shape", inputs=("X",),
    attrs={"pads": Attr("ints"), "mode": Attr("str", "constant", ("constant", "reflect", "edge")),
           "value": Attr("float", 0.0)})
def pad(inputs, attrs):
    """Pad with ``pads = (begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1})`` (ONNX order;
    negative values crop). ``value`` is the real constant; a quantized tensor pads with
    its zero point when ``value`` is 0, as TFLite does."""
    x, pads = inputs[0], attrs["pads"]
    if len(pads) != 2 * x.rank:
        raise ValueError(f"pads needs {2 * x.rank} values for {x.type_str()}, got {len(pads)}")
    shape = tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape))
    if any(d <= 0 for d in shape):
        raise ValueError(f"pads {list(pads)} crop {x.type_str()} to nothing")
    return [TensorType(x.dtype, shape)]


@op("DepthToSpace", "shape", inputs=("X",),
    attrs={"blocksize": Attr("int"), "mode": Attr("str", "DCR", ("DCR", "CRD")),
           "layout": LAYOUT_ATTR})
def depth_to_space(inputs, attrs):
    """Move ``blocksize^2`` channel groups into space (PixelShuffle is mode CRD). In NCHW
    ``DCR`` reads channels as ``[b, b, C']`` and ``CRD`` as ``[C', b, b]``; TFLite
    DEPTH_TO_SPACE is NHWC with ``DCR``."""
    x, block = inputs[0], attrs["blocksize"]
    need_rank(x, 4, "DepthToSpace input X")
    layout = attrs["layout"]
    c_axis = channel_axis(layout)
    if block <= 0 or x.shape[c_axis] % (block * block):
        raise ValueError(f"{x.shape[c_axis]} channels are not divisible by blocksize^2 = {block * block}")
    shape = list(x.shape)
    shape[c_axis] //= block * block
    for axis in spatial_axes(layout):
        shape[axis] *= block
    return [TensorType(x.dtype, tuple(shape))]
