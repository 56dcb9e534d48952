"""Shape computation and data movement: SHAPE, PACK, UNPACK, TILE, GATHER, FILL, RANGE,
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

import numpy as np

from ....ir import Value, get_op, infer_types
from ..common import converter, normalize_axis
from ..context import ConversionContext


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

