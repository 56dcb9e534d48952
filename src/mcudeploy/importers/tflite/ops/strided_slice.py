"""STRIDED_SLICE -> Slice (+ Reshape when axes are shrunk or added).

The sparse spec (``begin`` / ``end`` / ``strides`` of length n with bit masks) is expanded to
one dense entry per input axis as TensorFlow does: an ``ellipsis_mask`` bit stands for all
axes not otherwise named (an ellipsis is implied at the end when none is given); a
``new_axis_mask`` bit inserts a size-1 output axis and consumes no input axis. Per input
axis with stride s and size d (TFLite ``StartForAxis`` / ``StopForAxis``):

* valid range ``[0, d]`` for s > 0, ``[-1, d - 1]`` for s < 0;
* a masked begin is the range start (s > 0) or end (s < 0), a masked end the other bound;
  otherwise a negative index gets ``+ d`` and is clamped to the valid range;
* ``offset`` (newer schema): ``end = begin + end``;
* ``shrink_axis_mask``: take the single index ``begin`` and drop the axis.

The IR Slice follows ONNX, where a negative end counts from the back, so an end of -1
("before index 0" for s < 0) is written as ``-d - 1``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..common import converter
from ..context import ConversionContext


@dataclass
class AxisSlice:
    """The slice of one axis."""
    begin: int
    end: int
    stride: int
    shrink: bool

    def length(self) -> int:
        return max(0, -(-(self.end - self.begin) // self.stride))


def _bit(mask: int, index: int) -> bool:
    return bool((mask >> index) & 1)


def _axis_slice(ctx: ConversionContext, dim: int, begin: int, end: int, stride: int,
                masks: tuple[bool, bool, bool]) -> AxisSlice:
    begin_masked, end_masked, shrink = masks
    if stride == 0:
        raise ctx.unsupported("a stride of 0 is not allowed")
    low, high = (0, dim) if stride > 0 else (-1, dim - 1)

    def clamp(index: int) -> int:
        return min(max(index + dim if index < 0 else index, low), high)

    if shrink:
        index = begin + dim if begin < 0 else begin
        if not 0 <= index < dim:
            raise ctx.unsupported(f"shrink index {begin} is out of range for size {dim}")
        return AxisSlice(index, index + 1, 1, True)
    start = (low if stride > 0 else high) if begin_masked else clamp(begin)
    stop = (high if stride > 0 else low) if end_masked else clamp(end)
    return AxisSlice(start, stop, stride, False)


def _dense_spec(ctx: ConversionContext, shape: tuple[int, ...], begin: list[int], end: list[int],
                strides: list[int]) -> tuple[list[AxisSlice], list[int | None]]:
    """Per-input-axis slices and the output shape layout (``None`` = a new size-1 axis,
    an int = that input axis, shrunk axes omitted)."""
    options, rank = ctx.options, len(shape)
    begin_mask, end_mask = int(options.get("begin_mask", 0)), int(options.get("end_mask", 0))
    ellipsis, new_axis = int(options.get("ellipsis_mask", 0)), int(options.get("new_axis_mask", 0))
    shrink_mask = int(options.get("shrink_axis_mask", 0))
    count = len(begin)
    if not ellipsis:  # an implicit ellipsis after the last entry
        begin, end, strides = begin + [0], end + [0], strides + [1]
        ellipsis, count = 1 << (len(begin) - 1), count + 1
    new_after_ellipsis = sum(_bit(new_axis, i) for i in range(count)
                             if i > next(j for j in range(count) if _bit(ellipsis, j)))
    slices: list[AxisSlice] = []
    layout: list[int | None] = []
    for i in range(count):
        if _bit(ellipsis, i):
            stop = min(rank - (count - i) + 1 + new_after_ellipsis, rank)
            for axis in range(len(slices), stop):
                slices.append(AxisSlice(0, shape[axis], 1, False))
                layout.append(axis)
        elif _bit(new_axis, i):
            layout.append(None)
        else:
            axis = len(slices)
            if axis >= rank:
                raise ctx.unsupported(f"the slice spec names more than the input's {rank} axes")
            masks = (_bit(begin_mask, i), _bit(end_mask, i), _bit(shrink_mask, i))
            slices.append(_axis_slice(ctx, shape[axis], begin[i], end[i], strides[i], masks))
            if not slices[-1].shrink:
                layout.append(axis)
    return slices, layout


@converter("STRIDED_SLICE")
def strided_slice(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    begin, end = ctx.constant_ints(1, "begin"), ctx.constant_ints(2, "end")
    strides = ctx.constant_ints(3, "strides") if ctx.tensor(3) is not None else [1] * len(begin)
    if not len(begin) == len(end) == len(strides):
        raise ctx.unsupported(f"begin {begin}, end {end} and strides {strides} differ in length")
    if ctx.options.get("offset"):
        end = [b + e for b, e in zip(begin, end)]
    slices, layout = _dense_spec(ctx, x.shape, begin, end, strides)
    if any(s.length() == 0 for s in slices):
        raise ctx.unsupported("the slice is empty; empty tensors are not supported")
    changed = [(axis, s) for axis, s in enumerate(slices)
               if (s.begin, s.end, s.stride) != (0, x.shape[axis], 1)]
    attrs = {"starts": [s.begin for _, s in changed],
             "ends": [s.end if s.end >= 0 else -x.shape[a] - 1 for a, s in changed],
             "axes": [a for a, _ in changed], "steps": [s.stride for _, s in changed]}
    final_shape = tuple(1 if a is None else slices[a].length() for a in layout)
    sliced_shape = tuple(s.length() for s in slices)
    if final_shape == sliced_shape:
        ctx.add_node("Slice", [x], attrs)
        return
    quant = ctx.output_quant()
    sliced = ctx.add_helper("Slice", [x], attrs, suffix="slice", quant=quant, main=True)
    ctx.add_node("Reshape", [sliced], {"shape": final_shape}, suffix="reshape")
