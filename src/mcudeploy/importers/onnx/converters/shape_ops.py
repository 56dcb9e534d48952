"""Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice,
Pad, DepthToSpace, Identity, Dropout.

The IR wants every shape-determining operand as a static attribute, so the ONNX inputs
that carry them (shape, axes, split, starts/ends/steps, pads) must be constants; they are
normalised here: negative axes made non-negative, Reshape's ``0`` (copy) and ``-1``
(infer) resolved, Slice bounds clamped to ``[-dim - 1, dim]`` (same result, small ints).
Where an opset from 11 on moved an attribute to an input (Squeeze / Unsqueeze / Split at
13) both forms are read; older forms (Slice < 10, Pad < 11) never reach a converter, since
models older than opset 11 are upgraded to 13 first. A Split piece of size 0 becomes an
empty constant, which Concat drops (rotary embeddings split ``[rotated, 0]`` and join the
pieces back).
"""
from __future__ import annotations

import math
from typing import overload

import numpy as np
import onnx

from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW


@overload
def _ints(array: np.ndarray) -> list[int]: ...
@overload
def _ints(array: np.ndarray | None) -> list[int] | None: ...
def _ints(array: np.ndarray | None) -> list[int] | None:
    return None if array is None else [int(v) for v in np.asarray(array).reshape(-1)]


def _attr_or_input(ctx: ConversionContext, node: onnx.NodeProto, name: str, index: int,
                   since: int) -> list[int] | None:
    """Integer list given as attribute ``name`` before opset ``since``, as input ``index`` after."""
    if ctx.opset >= since:
        return _ints(ctx.constant_input(node, index, name))
    value = ctx.attributes(node).get(name)
    return None if value is None else [int(v) for v in value]


def _axes(ctx: ConversionContext, node: onnx.NodeProto, axes: list[int], rank: int) -> list[int]:
    if any(not -rank <= a < rank for a in axes):
        raise ctx.invalid(node, f"axes {axes} are out of range for rank {rank}")
    return [a % rank for a in axes]


@converter("Identity")
def convert_identity(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    ctx.emit("Identity", [ctx.input(node, 0)], None, node)


@converter("Dropout")
def convert_dropout(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    if ctx.output_used(node, 1):
        raise ctx.unsupported(node, f"its mask output {node.output[1]!r} is used; only "
                              "inference-time Dropout (identity) is supported")
    training = ctx.constant_input(node, 2, "training_mode") if ctx.opset >= 12 else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise ctx.unsupported(node, "training_mode is true; export the model in inference mode")
    if ctx.opset >= 12:
        ratio_input = ctx.constant_input(node, 1, "ratio")
        ratio = 0.5 if ratio_input is None else float(np.asarray(ratio_input).reshape(-1)[0])
    else:
        ratio = float(ctx.attributes(node).get("ratio", 0.5))
    ctx.emit("Dropout", [ctx.input(node, 0)], {"ratio": ratio}, node, outputs=[node.output[0]])


@converter("Reshape")
def convert_reshape(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    target = _ints(ctx.required_constant_input(node, 1, "shape"))
    allow_zero = ctx.attributes(node).get("allowzero", 0)
    shape = []
    for index, size in enumerate(target):
        if size == 0 and not allow_zero:
            if index >= x.rank:
                raise ctx.invalid(node, f"shape {target} copies dimension {index} (0) that "
                                  f"{x.type_str()} does not have")
            size = x.shape[index]
        shape.append(size)
    if shape.count(-1) > 1 or any(s < -1 or s == 0 for s in shape):
        raise ctx.invalid(node, f"cannot reshape {x.type_str()} to {target} (allowzero="
                          f"{allow_zero}): at most one -1 and no empty dimensions")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if x.size % known:
            raise ctx.invalid(node, f"cannot reshape {x.type_str()} to {target}")
        shape[shape.index(-1)] = x.size // known
    ctx.emit("Reshape", [x], {"shape": shape}, node)


@converter("Flatten")
def convert_flatten(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    axis = ctx.attributes(node).get("axis", 1)
    if not -x.rank <= axis <= x.rank:
        raise ctx.invalid(node, f"axis {axis} is out of range for {x.type_str()}")
    ctx.emit("Flatten", [x], {"axis": axis + x.rank if axis < 0 else axis}, node)


@converter("Squeeze")
def convert_squeeze(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    axes = _attr_or_input(ctx, node, "axes", 1, since=13)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    ctx.emit("Squeeze", [x], {"axes": sorted(_axes(ctx, node, axes, x.rank))}, node)


@converter("Unsqueeze")
def convert_unsqueeze(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    axes = _attr_or_input(ctx, node, "axes", 1, since=13) or []
    axes = _axes(ctx, node, axes, x.rank + len(axes))
    ctx.emit("Unsqueeze", [x], {"axes": sorted(axes)}, node)


@converter("Transpose")
def convert_transpose(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    perm = ctx.attributes(node).get("perm") or list(reversed(range(x.rank)))
    ctx.emit("Transpose", [x], {"perm": perm}, node)


@converter("Concat")
def convert_concat(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    names = [name for name in node.input if name and not _is_empty(ctx, name)]
    inputs = [ctx.value(name) for name in names]
    if len(inputs) == 1:  # the others were empty pieces (see Split)
        ctx.emit("Identity", inputs, None, node)
        return
    axis = _axes(ctx, node, [ctx.attributes(node).get("axis", 0)], inputs[0].rank)[0]
    ctx.emit("Concat", inputs, {"axis": axis}, node)


def _is_empty(ctx: ConversionContext, name: str) -> bool:
    array = ctx.constant(name)
    return array is not None and array.size == 0


@converter("Split")
def convert_split(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    attrs = ctx.attributes(node)
    axis = _axes(ctx, node, [attrs.get("axis", 0)], x.rank)[0]
    sizes = _attr_or_input(ctx, node, "split", 1, since=13)
    count, dim = len(node.output), x.shape[axis]
    if sizes is None and "num_outputs" in attrs:
        chunk = -(-dim // attrs["num_outputs"])
        sizes = [chunk] * (attrs["num_outputs"] - 1) + [dim - chunk * (attrs["num_outputs"] - 1)]
    elif sizes is None:
        if dim % count:
            raise ctx.invalid(node, f"axis {axis} of {x.type_str()} does not split into "
                              f"{count} equal parts")
        sizes = [dim // count] * count
    if len(sizes) != count or sum(sizes) != dim or min(sizes) < 0 or max(sizes) <= 0:
        raise ctx.invalid(node, f"split sizes {sizes} do not cut axis {axis} of "
                          f"{x.type_str()} into {count} outputs")
    kept = [(size, name) for size, name in zip(sizes, node.output) if size > 0]
    for size, name in zip(sizes, node.output):
        if size == 0:  # an empty piece: a constant that Concat drops
            ctx.constants[name] = np.zeros(x.shape[:axis] + (0,) + x.shape[axis + 1:], x.dtype.numpy)
    if len(kept) == 1:
        ctx.emit("Identity", [x], None, node, outputs=[kept[0][1]])
        return
    ctx.emit("Split", [x], {"axis": axis, "split": [size for size, _ in kept]}, node,
             outputs=[name for _, name in kept])


@converter("Slice")
def convert_slice(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    starts, ends = (_ints(ctx.required_constant_input(node, i, what)) for i, what in ((1, "starts"), (2, "ends")))
    axes, steps = (_ints(ctx.constant_input(node, i, what)) for i, what in ((3, "axes"), (4, "steps")))
    axes = _axes(ctx, node, axes if axes is not None else list(range(len(starts))), x.rank)
    steps = steps if steps is not None else [1] * len(starts)
    clamped_starts, clamped_ends = [], []
    for start, end, axis in zip(starts, ends, axes):
        dim = x.shape[axis]
        clamped_starts.append(min(max(start, -dim - 1), dim))
        clamped_ends.append(min(max(end, -dim - 1), dim))
    ctx.emit("Slice", [x], {"starts": clamped_starts, "ends": clamped_ends, "axes": axes,
                            "steps": steps}, node)


@converter("Pad")
def convert_pad(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    x = ctx.required_input(node, 0)
    attrs = ctx.attributes(node)
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge"):
        raise ctx.unsupported(node, f"mode {mode!r} is not supported (constant, reflect, edge)")
    pads = _ints(ctx.required_constant_input(node, 1, "pads"))
    constant = ctx.constant_input(node, 2, "constant_value")
    value = 0.0 if constant is None else float(np.asarray(constant).reshape(-1)[0])
    axes = _ints(ctx.constant_input(node, 3, "axes"))
    if axes is not None:
        axes = _axes(ctx, node, axes, x.rank)
        full = [0] * (2 * x.rank)
        for position, axis in enumerate(axes):
            full[axis], full[axis + x.rank] = pads[position], pads[position + len(axes)]
        pads = full
    ctx.emit("Pad", [x], {"pads": pads, "mode": mode, "value": value}, node)


@converter("DepthToSpace")
def convert_depth_to_space(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    ir_attrs = {"blocksize": attrs["blocksize"], "mode": attrs.get("mode", "DCR"), "layout": NCHW}
    ctx.emit("DepthToSpace", [ctx.input(node, 0)], ir_attrs, node).outputs[0].layout = NCHW
