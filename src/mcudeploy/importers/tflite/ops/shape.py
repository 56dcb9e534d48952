"""Data-movement ops: RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, CONCATENATION, SPLIT,
SPLIT_V, SLICE, PAD, PADV2, MIRROR_PAD, DEPTH_TO_SPACE. Shape-giving operands must be
constants; they become static IR attributes.

Pads: TFLite ``paddings`` ``[rank, 2]`` (row i = before / after of axis i) become ONNX order
``(before_0, ..., before_{r-1}, after_0, ..., after_{r-1})``. PADV2's constant value is
stored quantized like the input; the IR wants the real value ``scale * (q - zero_point)``.

Shape computation and indexing: SHAPE, PACK, UNPACK, TILE, GATHER, FILL, RANGE,
BROADCAST_TO, CAST, SPACE_TO_DEPTH.

* SHAPE is a constant (IR shapes are static); what is computed from it folds at import
  (:mod:`..folding`).
* PACK ``[x_0, ..., x_{n-1}]`` along ``axis`` = ``Concat(Unsqueeze(x_i, axis), axis)``;
  UNPACK output i = ``Reshape(Slice(x, i:i+1 along axis))`` (each output is its own pair,
  so every piece is an ordinary single-output kernel). Quantized: TFLite requires the
  inputs and outputs to share scale and zero point, so both are raw copies, as in TFLM.
* FILL ``(dims, value)`` = ``Expand(value, dims)``; BROADCAST_TO = ``Expand``; RANGE of
  constants is computed here (its output shape depends on its values).
* GATHER with ``batch_dims`` 0 is the IR Gather (indices may be computed).
"""
from __future__ import annotations

import math

import numpy as np

from ....ir import Value, get_op, infer_types
from ..common import ACTIVATION_RANGES, converter, normalize_axis
from ..context import ConversionContext
from ..schema_tables import MirrorPadMode
from ..tensors import quant_params


def _resolve_shape(ctx: ConversionContext, shape: list[int], size: int) -> tuple[int, ...]:
    """Replace one ``-1`` so that the shape holds ``size`` elements."""
    known = math.prod(d for d in shape if d != -1)
    if shape.count(-1) == 1 and known > 0 and size % known == 0:
        shape = [size // known if d == -1 else d for d in shape]
    if any(d <= 0 for d in shape) or math.prod(shape) != size:
        raise ctx.unsupported(f"cannot reshape {size} elements to {shape}")
    return tuple(shape)


@converter("RESHAPE")
def reshape(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    if not ctx.infer_shapes:
        target = ctx.stored_shape()
    elif (shape_tensor := ctx.tensor(1)) is not None and ctx.is_constant(shape_tensor):
        target = _resolve_shape(ctx, ctx.constant_ints(1, "shape"), x.size)
    else:
        target = _resolve_shape(ctx, list(ctx.options.get("new_shape", ())), x.size)
    ctx.add_node("Reshape", [x], {"shape": target})


@converter("SQUEEZE")
def squeeze(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    axes = [normalize_axis(ctx, a, x.rank) for a in ctx.options.get("squeeze_dims", ())]
    if not axes:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    ctx.add_node("Squeeze", [x], {"axes": sorted(set(axes))})


@converter("EXPAND_DIMS")
def expand_dims(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    (axis,) = ctx.constant_ints(1, "axis")
    ctx.add_node("Unsqueeze", [x], {"axes": [normalize_axis(ctx, axis, x.rank + 1)]})


@converter("TRANSPOSE")
def transpose(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    ctx.add_node("Transpose", [x], {"perm": ctx.constant_ints(1, "permutation")})


@converter("CONCATENATION")
def concatenation(ctx: ConversionContext) -> None:
    inputs = [ctx.require_input(i, "input") for i in range(ctx.input_count())]
    axis = normalize_axis(ctx, int(ctx.options.get("axis", 0)), inputs[0].rank)
    code = int(ctx.options.get("fused_activation_function", 0))
    if code == 0:
        ctx.add_node("Concat", inputs, {"axis": axis})
        return
    if code not in ACTIVATION_RANGES:
        raise ctx.unsupported(f"fused activation code {code} is not supported")
    low, high = ACTIVATION_RANGES[code]
    joined = ctx.add_helper("Concat", inputs, {"axis": axis}, suffix="concat", main=True,
                            quant=ctx.output_quant())
    ctx.add_node("Clip", [joined], {"min": low, "max": high}, suffix="activation")


@converter("SPLIT")
def split(ctx: ConversionContext) -> None:
    x = ctx.require_input(1, "input")
    (axis,) = ctx.constant_ints(0, "axis")
    axis = normalize_axis(ctx, axis, x.rank)
    count = int(ctx.options.get("num_splits", len(ctx.operator.outputs)))
    if count <= 0 or x.shape[axis] % count:
        raise ctx.unsupported(f"cannot split {x.shape[axis]} elements into {count} equal parts")
    ctx.add_node("Split", [x], {"axis": axis, "split": [x.shape[axis] // count] * count})


@converter("SPLIT_V")
def split_v(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    sizes = ctx.constant_ints(1, "size_splits")
    (axis,) = ctx.constant_ints(2, "axis")
    axis = normalize_axis(ctx, axis, x.rank)
    if sizes.count(-1) == 1:
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    ctx.add_node("Split", [x], {"axis": axis, "split": sizes})


@converter("SLICE")
def slice_(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    begin, size = ctx.constant_ints(1, "begin"), ctx.constant_ints(2, "size")
    if len(begin) != x.rank or len(size) != x.rank:
        raise ctx.unsupported(f"begin {begin} / size {size} do not match rank {x.rank}")
    ends = [x.shape[i] if s == -1 else b + s for i, (b, s) in enumerate(zip(begin, size))]
    ctx.add_node("Slice", [x], {"starts": begin, "ends": ends, "axes": list(range(x.rank)),
                                "steps": [1] * x.rank})


def _onnx_pads(ctx: ConversionContext, rank: int) -> list[int]:
    paddings = ctx.constant(1, "paddings")
    if paddings.shape != (rank, 2):
        raise ctx.unsupported(f"paddings shape {list(paddings.shape)} must be [{rank}, 2]")
    return [int(v) for v in paddings[:, 0]] + [int(v) for v in paddings[:, 1]]


@converter("PAD", "PADV2")
def pad(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    value = 0.0
    if ctx.operator.op_name == "PADV2" and (constant_tensor := ctx.tensor(2)) is not None:
        raw = ctx.constant(2, "constant value").reshape(-1)
        quant = quant_params(ctx.path, constant_tensor)
        value = float(quant.dequantize(raw)[0]) if quant is not None else float(raw[0])
    ctx.add_node("Pad", [x], {"pads": _onnx_pads(ctx, x.rank), "value": value})


@converter("MIRROR_PAD")
def mirror_pad(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    if int(ctx.options.get("mode", MirrorPadMode.REFLECT)) != MirrorPadMode.REFLECT:
        raise ctx.unsupported("MIRROR_PAD mode SYMMETRIC is not supported (only REFLECT)")
    ctx.add_node("Pad", [x], {"pads": _onnx_pads(ctx, x.rank), "mode": "reflect"})


@converter("DEPTH_TO_SPACE")
def depth_to_space(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    ctx.add_node("DepthToSpace", [x], {"blocksize": int(ctx.options.get("block_size", 0)),
                                       "mode": "DCR", "layout": "NHWC"})


def bind_constant(ctx: ConversionContext, position: int, array: np.ndarray) -> None:
    """Output ``position`` of the operator is the constant ``array`` (stored dtype)."""
    tensor = ctx.output_tensor(position)
    name = ctx.graph.unique_name(ctx.tensor_name(tensor))
    ctx.bind(position, Value.constant(name, np.asarray(array).astype(ctx.output_dtype(position).numpy)))


@converter("SHAPE")
def shape(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    bind_constant(ctx, 0, np.array(x.shape, dtype=np.int64))


@converter("PACK")
def pack(ctx: ConversionContext) -> None:
    inputs = [ctx.require_input(i, "input") for i in range(ctx.input_count())]
    axis = normalize_axis(ctx, int(ctx.options.get("axis", 0)), inputs[0].rank + 1)
    quant = ctx.output_quant()
    expanded = [ctx.add_helper("Unsqueeze", [x], {"axes": [axis]}, suffix=f"unsqueeze_{i}",
                               quant=x.quant if x.quant is not None else quant)
                for i, x in enumerate(inputs)]
    if len(expanded) == 1:
        ctx.add_node("Identity", expanded)
        return
    ctx.add_node("Concat", expanded, {"axis": axis})


def emit_output(ctx: ConversionContext, position: int, op: str, inputs: list, attrs: dict,
                suffix: str) -> None:
    """A node producing operator output ``position`` alone (stored name, dtype, quantization)."""
    (inferred,) = infer_types(op, inputs, get_op(op).normalize_attrs(attrs))
    tensor = ctx.output_tensor(position)
    value = Value(ctx.graph.unique_name(ctx.tensor_name(tensor)), ctx.output_dtype(position),
                  inferred.shape, quant=ctx.output_quant(position),
                  layout="NHWC" if len(inferred.shape) == 4 else None)
    ctx.graph.add_node(op, inputs, attrs, name=f"{ctx.node_name}/{suffix}", outputs=[value])
    ctx.bind(position, value)


@converter("UNPACK")
def unpack(ctx: ConversionContext) -> None:
    x = ctx.require_input(0, "input")
    axis = normalize_axis(ctx, int(ctx.options.get("axis", 0)), x.rank)
    count = len(ctx.operator.outputs)
    if count != x.shape[axis]:
        raise ctx.unsupported(f"{count} outputs, but axis {axis} of {x.type_str()} has "
                              f"{x.shape[axis]} elements")
    piece_shape = x.shape[:axis] + x.shape[axis + 1:]
    for index in range(count):
        piece = ctx.add_helper("Slice", [x], {"starts": [index], "ends": [index + 1],
                                              "axes": [axis], "steps": [1]},
                               suffix=f"slice_{index}", quant=x.quant)
        emit_output(ctx, index, "Reshape", [piece], {"shape": piece_shape}, f"reshape_{index}")


@converter("TILE")
def tile(ctx: ConversionContext) -> None:
    ctx.add_node("Tile", [ctx.require_input(0, "input")],
                 {"repeats": ctx.constant_ints(1, "multiples")})


@converter("GATHER")
def gather(ctx: ConversionContext) -> None:
    x, indices = ctx.require_input(0, "params"), ctx.require_input(1, "indices")
    if int(ctx.options.get("batch_dims", 0)) != 0:
        raise ctx.unsupported(f"batch_dims={ctx.options['batch_dims']} is not supported (only 0)")
    axis = normalize_axis(ctx, int(ctx.options.get("axis", 0)), x.rank)
    ctx.add_node("Gather", [x, indices], {"axis": axis})


@converter("FILL")
def fill(ctx: ConversionContext) -> None:
    value = ctx.require_input(1, "value")
    ctx.add_node("Expand", [value], {"shape": ctx.constant_ints(0, "dims")})


@converter("BROADCAST_TO")
def broadcast_to(ctx: ConversionContext) -> None:
    ctx.add_node("Expand", [ctx.require_input(0, "input")],
                 {"shape": ctx.constant_ints(1, "shape")})


@converter("RANGE")
def range_(ctx: ConversionContext) -> None:
    start, limit, delta = (ctx.constant(i, what).reshape(-1)[0]
                           for i, what in enumerate(("start", "limit", "delta")))
    bind_constant(ctx, 0, np.arange(start, limit, delta))


@converter("CAST")
def cast(ctx: ConversionContext) -> None:
    ctx.add_node("Cast", [ctx.require_input(0, "input")], {"to": ctx.output_dtype().value})


@converter("SPACE_TO_DEPTH")
def space_to_depth(ctx: ConversionContext) -> None:
    ctx.add_node("SpaceToDepth", [ctx.require_input(0, "input")],
                 {"blocksize": int(ctx.options.get("block_size", 0)), "layout": "NHWC"})

