"""Receptive fields of the tilable ops, one spatial axis at a time: which input rows a tile
of output rows needs, and the op's attributes inside the tile.

Input: a node of an NHWC region, a spatial axis (1 = H, 2 = W) and the output interval
``[begin, end)`` its consumers need. Output: :class:`AxisWindow` - the input interval it
reads, the output interval it computes (at least the one needed; larger only for a Resize,
whose tile output is then cropped) and its pads on that axis inside the tile.

Windows (Conv, depthwise Conv, MaxPool, AveragePool), with stride ``s``, dilation ``d``,
kernel ``k``, pads ``(p_begin, p_end)`` and an input of ``n`` rows::

    first = begin * s - p_begin,      last = (end - 1) * s - p_begin + (k - 1) * d
    input = [max(0, first), min(n, last + 1))
    pads  = (max(0, -first), max(0, last + 1 - n))

so a tile keeps only the padding at the real image borders (the top pad for the first
stripe, the bottom pad for the last); interior halos are real rows. The tile's output then
has exactly ``end - begin`` rows (``window_out`` of the tile input and pads), and each of its
taps reads the same input element as in the whole tensor: the same integer arithmetic on the
same numbers, so a tiled graph is bit-exact by construction. AveragePool's divisor counts
real elements only (TFLite), which the same pads give.

Pad (constant): output row ``o`` is input row ``o - p_begin``: input ``[max(0, begin -
p_begin), min(n, end - p_begin))``, pads at the borders only.

Resize by a power-of-two factor ``f`` (exact in float32, so the tile's ``in / out`` scale is
the whole tensor's): nearest reads ``[begin // f, ceil(end / f))``; bilinear one more row on
each side (its edge rows clamp), and computes ``f`` output rows per input row, cropped
afterwards. The tile's index maps are compared with the whole tensor's (the integer
kernel's own ``nearest_indices`` / ``bilinear_weights``); a mismatch refuses the tile.

Pointwise ops (elementwise, activations, quantize, Concat or Slice along channels): the same
rows; an input of extent 1 on the axis is broadcast (read whole). The NCHW -> NHWC
Transpose of an ONNX model's input reads the same rows on its input's axis ``perm[axis]``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Node, Value, get_op
from ..reference.int_kernels.resize import (
    BILINEAR_MODES,
    NEAREST_MODES,
    ResizeParams,
    bilinear_weights,
    nearest_indices,
)

Interval = tuple[int, int]   # [begin, end)

WINDOW_OPS = ("Conv", "MaxPool", "AveragePool")
NCHW_TO_NHWC = (0, 2, 3, 1)
POINTWISE_CATEGORIES = ("elementwise", "activation", "quant")
AXIS_WIDE_OPS = ("Softmax", "LogSoftmax", "Hardmax")   # normalise along an axis: not pointwise
TILABLE_TEXT = ("Conv (incl. depthwise, dilated), MaxPool, AveragePool, constant Pad, Resize by "
                "2/4/8 (nearest, bilinear half-pixel), elementwise ops, activations, quantize, "
                "Concat and Slice along channels, and the NCHW -> NHWC Transpose")


@dataclass(frozen=True)
class AxisWindow:
    """What one node does on one axis inside a tile."""
    inputs: tuple[Interval | None, ...]   # per input: rows read (None: constant / broadcast, whole)
    computed: Interval                     # output rows computed (contains the rows needed)
    pads: tuple[int, int] = (0, 0)         # the op's pads on this axis inside the tile
    input_axis: int | None = None          # the inputs' axis these rows are on (None: the same)


def tile_refusal(node: Node) -> str | None:
    """Why ``node`` cannot run on a spatial tile of its NHWC tensors (None when it can)."""
    op = node.op
    if len(node.outputs) != 1 or node.outputs[0].rank != 4:
        return "its output is not one rank-4 NHWC tensor"
    if op in AXIS_WIDE_OPS:
        return f"{op} normalises over a whole axis"
    if op in WINDOW_OPS or op == "Pad":
        return _window_refusal(node)
    if op == "Resize":
        return _resize_refusal(node)
    if op == "Concat":
        return None if node.attrs["axis"] % 4 == 3 else "it concatenates along a spatial axis"
    if op == "Slice":
        return None if all(axis % 4 == 3 for axis in node.attrs["axes"]) else "it slices a spatial axis"
    if op == "Transpose":
        return None if tuple(node.attrs["perm"]) == NCHW_TO_NHWC else "only the NCHW -> NHWC Transpose"
    if get_op(op).category in POINTWISE_CATEGORIES:
        return None
    return f"{op} is not a tilable op"


def _window_refusal(node: Node) -> str | None:
    if node.attrs.get("layout", "NHWC") != "NHWC":
        return "it is not NHWC"
    if node.op == "Pad":
        pads, mode = node.attrs["pads"], node.attrs["mode"]
        return "only a constant Pad that does not crop" if mode != "constant" or min(pads) < 0 else None
    if node.op == "Conv" and node.inputs[1].const is None:
        return "its weights are not constant"
    if node.attrs.get("ceil_mode", 0):
        return "ceil_mode pooling"
    if node.op != "Conv" and node.outputs[0].shape[1:3] == (1, 1) and node.inputs[0].shape[1:3] != (1, 1):
        return "it pools the whole map into one value (global pooling)"
    return None


def _resize_refusal(node: Node) -> str | None:
    x, y = node.inputs[0], node.outputs[0]
    table = NEAREST_MODES if node.attrs["mode"] == "nearest" else BILINEAR_MODES
    if node.attrs["coordinate_transformation_mode"] not in table:
        return f"coordinate mode {node.attrs['coordinate_transformation_mode']} (tilable: {', '.join(table)})"
    for axis in (1, 2):
        factor, rest = divmod(y.shape[axis], x.shape[axis])
        if rest or factor & (factor - 1):
            return f"axis {axis} is resized by {y.shape[axis]}/{x.shape[axis]}, not a power of two"
    if x.shape[0] != y.shape[0] or x.shape[3] != y.shape[3]:
        return "it resizes the batch or the channels"
    return None


def _kernel_geometry(node: Node, axis: int) -> tuple[int, int, int, int, int]:
    """(kernel, stride, dilation, pad_begin, pad_end) of a window op on ``axis`` (1 or 2)."""
    index = axis - 1
    pads = node.attrs["pads"]
    if node.op == "Conv":
        kernel = node.inputs[1].shape[1 + index]
    else:
        kernel = node.attrs["kernel_shape"][index]
    return (kernel, node.attrs["strides"][index], node.attrs["dilations"][index],
            pads[index], pads[index + 2])


def extent_on(value: Value, axis: int) -> int:
    """The value's extent on NHWC ``axis`` under numpy broadcasting (trailing axes align)."""
    index = axis - (4 - value.rank)
    return value.shape[index] if index >= 0 else 1


def _data_inputs(node: Node, needed: Interval, axis: int) -> tuple[Interval | None, ...]:
    """Pointwise: every input reads the output rows, except broadcast ones (extent 1: whole)."""
    output = node.outputs[0].shape[axis]
    return tuple(None if value is None or (extent_on(value, axis) == 1 and output > 1) else needed
                 for value in node.inputs)


def axis_window(node: Node, axis: int, needed: Interval) -> AxisWindow:
    """The node's :class:`AxisWindow` for the output rows ``needed`` on ``axis``."""
    begin, end = needed
    if node.op in WINDOW_OPS:
        kernel, stride, dilation, pad_begin, _ = _kernel_geometry(node, axis)
        size = node.inputs[0].shape[axis]
        first, last = begin * stride - pad_begin, (end - 1) * stride - pad_begin + (kernel - 1) * dilation
        reads = (max(0, first), min(size, last + 1))
        rest = tuple(None for _ in node.inputs[1:])
        return AxisWindow((reads, *rest), needed, (max(0, -first), max(0, last + 1 - size)))
    if node.op == "Pad":
        pad_begin, size = node.attrs["pads"][axis], node.inputs[0].shape[axis]
        reads = (max(0, begin - pad_begin), min(size, end - pad_begin))
        return AxisWindow((reads,), needed, (max(0, pad_begin - begin), max(0, end - pad_begin - size)))
    if node.op == "Resize":
        return _resize_window(node, axis, needed)
    if node.op == "Transpose":
        return AxisWindow((needed,), needed, input_axis=node.attrs["perm"][axis])
    return AxisWindow(_data_inputs(node, needed, axis), needed)


def _resize_window(node: Node, axis: int, needed: Interval) -> AxisWindow:
    size, out_size = node.inputs[0].shape[axis], node.outputs[0].shape[axis]
    factor = out_size // size
    if factor == 1:
        return AxisWindow((needed,), needed)
    halo = 0 if node.attrs["mode"] == "nearest" else 1
    reads = (max(0, needed[0] // factor - halo), min(size, -(-needed[1] // factor) + halo))
    return AxisWindow((reads,), (reads[0] * factor, reads[1] * factor))


def resize_mismatch(node: Node, axis: int, window: AxisWindow, needed: Interval) -> str | None:
    """Whether the tile's index maps equal the whole tensor's on ``needed`` (None when they do)."""
    size, out_size = node.inputs[0].shape[axis], node.outputs[0].shape[axis]
    assert window.inputs[0] is not None  # a Resize window reads rows of its data input
    (read_begin, read_end), (computed_begin, computed_end) = window.inputs[0], window.computed
    nearest = node.attrs["mode"] == "nearest"
    table = NEAREST_MODES if nearest else BILINEAR_MODES
    params = ResizeParams(*table[node.attrs["coordinate_transformation_mode"]])
    wanted = slice(needed[0] - computed_begin, needed[1] - computed_begin)
    if nearest:
        whole = nearest_indices(size, out_size, params)[needed[0]:needed[1]]
        tile = nearest_indices(read_end - read_begin, computed_end - computed_begin, params)[wanted] + read_begin
        same = np.array_equal(whole, tile)
    else:
        whole = bilinear_weights(size, out_size, params)
        tile = bilinear_weights(read_end - read_begin, computed_end - computed_begin, params)
        same = all(np.array_equal(w[needed[0]:needed[1]], t[wanted] + (read_begin if i < 2 else 0))
                   for i, (w, t) in enumerate(zip(whole, tile)))
    return None if same else (f"its tile rows {needed} do not resample like the whole tensor "
                              f"(index maps differ)")
