"""Emitters of :mod:`.kernel_calls` for the kernels added in issue 15: Max / Min,
SquaredDifference (``binary_more.c``), ReduceMax / ReduceMin / ArgMax / ArgMin
(``reduce.c``), ReduceSum (``mean.c`` with the undivided multiplier), Gather / Tile /
Expand (``gather.c``), Abs / Rsqrt (``unary_math.c``), LogSoftmax (``log_softmax.c``). The same
mapping runs through ctypes in ``runtime/tests/c_runners.py``; every number is copied from
the prepared parameters or the node's attributes.
"""
from __future__ import annotations

from ..errors import UnsupportedError
from .c_literals import c_int
from .kernel_calls import CallContext, KernelCall, emitter, suffix


def _fields(values) -> str:
    return "{" + ", ".join(c_int(v) for v in values) + "}"


def _padded_axis(rank: int, axis: int) -> int:
    return 4 - rank + axis % rank


def _binary_arguments(context: CallContext, call: KernelCall) -> str:
    node = context.node
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    return (f"{context.dims_ref(call, 'in0_dims', a.shape)}, {context.pointer(a)}, "
            f"{context.dims_ref(call, 'in1_dims', b.shape)}, {context.pointer(b)}, "
            f"{context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)}")


@emitter("Max", "Min", sources=("binary_more.c",))
def max_or_min(context: CallContext, call: KernelCall) -> None:
    function = "mcu_maximum" if context.node.op == "Max" else "mcu_minimum"
    call.call = f"{function}_{suffix(context.node.outputs[0])}(NULL, {_binary_arguments(context, call)})"


@emitter("SquaredDifference", sources=("binary_more.c",))
def squared_difference(context: CallContext, call: KernelCall) -> None:
    p = context.params
    fields = (p.left_shift, p.input1_offset, p.input2_offset, p.output_offset, p.input1_multiplier,
              p.input1_shift, p.input2_multiplier, p.input2_shift, p.output_multiplier, p.output_shift)
    quant = context.declare(call, "mcu_squared_difference_quant", "quant", _fields(fields))
    call.call = (f"mcu_squared_difference_{suffix(context.node.outputs[0])}(NULL, {quant}, "
                 f"{_binary_arguments(context, call)})")


def _reduced(context: CallContext) -> tuple[int, tuple[int, ...]]:
    """The MCU_AXIS_* mask of the node's axes and the 4-D output dims (1 where reduced)."""
    x = context.node.inputs[0]
    axes = {_padded_axis(x.rank, a) for a in context.node.attrs["axes"]}
    full = (1,) * (4 - x.rank) + x.shape
    return sum(1 << a for a in axes), tuple(1 if a in axes else full[a] for a in range(4))


@emitter("ReduceMax", "ReduceMin", sources=("reduce.c",))
def reduce_extreme(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    mask, kept = _reduced(context)
    params = context.declare(call, "mcu_reduce_params", "params", "{" + str(mask) + "}")
    kind = "max" if context.node.op == "ReduceMax" else "min"
    call.call = (f"mcu_reduce_{kind}_{suffix(y)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', kept)}, {context.pointer(y)})")


@emitter("ReduceSum", sources=("mean.c",))
def reduce_sum(context: CallContext, call: KernelCall) -> None:
    """TFLite SUM is the MEAN kernel with a multiplier that is not divided by the count."""
    p, x, y = context.params, context.node.inputs[0], context.node.outputs[0]
    mask, kept = _reduced(context)
    params = context.declare(call, "mcu_mean_params", "params", "{" + str(mask) + "}")
    fields = (p.input_zero_point, p.output_zero_point, p.output_multiplier, p.output_shift)
    quant = context.declare(call, "mcu_mean_quant", "quant", _fields(fields))
    call.call = (f"mcu_mean_{suffix(y)}(NULL, {params}, {quant}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', kept)}, {context.pointer(y)})")


@emitter("ArgMax", "ArgMin", sources=("reduce.c",))
def arg_extreme(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    if str(y.dtype) != "int32":
        raise UnsupportedError(f"node {node.name!r} ({node.op}): {y.dtype} indices have no C kernel; "
                               "the runtime (like TFLite Micro) writes int32 (TFLite ARG_MAX output_type "
                               "int32)")
    axis = _padded_axis(x.rank, node.attrs["axis"])
    kept = list((1,) * (4 - x.rank) + x.shape)
    kept[axis] = 1
    params = context.declare(call, "mcu_arg_params", "params",
                             "{" + f"{axis}, {node.attrs['select_last_index']}" + "}")
    kind = "max" if node.op == "ArgMax" else "min"
    call.call = (f"mcu_arg_{kind}_{suffix(x)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', tuple(kept))}, {context.pointer(y)})")


def _indices(context: CallContext, call: KernelCall) -> str:
    """The C expression of Gather's int32 indices: an int32 tensor (constant or computed),
    or the values of an int64 constant copied to an int32 array."""
    indices = context.node.inputs[1]
    if indices.const is not None and str(indices.dtype) != "int32":
        return context.int_array(call, "indices", indices.const, "gather indices")
    if str(indices.dtype) != "int32":
        raise UnsupportedError(f"node {context.node.name!r} (Gather): computed {indices.dtype} indices have "
                               "no C kernel (the runtime reads int32 indices)")
    return context.pointer(indices)


@emitter("Gather", sources=("gather.c",))
def gather(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    params = context.declare(call, "mcu_gather_params", "params",
                             "{" + str(_padded_axis(x.rank, node.attrs["axis"])) + "}")
    call.call = (f"mcu_gather(NULL, {params}, {x.dtype.itemsize}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {node.inputs[1].size}, {_indices(context, call)}, {context.pointer(y)})")


@emitter("Tile", "Expand", sources=("gather.c",))
def tile(context: CallContext, call: KernelCall) -> None:
    """Expand is a Tile by ``out / in`` per axis (each input axis is 1 or the output's)."""
    x, y = context.node.inputs[0], context.node.outputs[0]
    full_in, full_out = (1,) * (4 - x.rank) + x.shape, (1,) * (4 - y.rank) + y.shape
    repeats = tuple(o // i for i, o in zip(full_in, full_out))
    params = context.declare(call, "mcu_tile_params", "params", "{{" + ", ".join(map(str, repeats)) + "}}")
    call.call = (f"mcu_tile(NULL, {params}, {x.dtype.itemsize}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Abs", sources=("unary_math.c",))
def abs_(context: CallContext, call: KernelCall) -> None:
    p, x, y = context.params, context.node.inputs[0], context.node.outputs[0]
    fields = (p.input_zero_point, p.output_zero_point, p.needs_rescale, p.multiplier, p.shift)
    quant = context.declare(call, "mcu_abs_quant", "quant", _fields(fields))
    call.call = (f"mcu_abs_{suffix(y)}(NULL, {quant}, {context.dims_ref(call, 'dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.pointer(y)})")


@emitter("Rsqrt", sources=("unary_math.c",))
def rsqrt(context: CallContext, call: KernelCall) -> None:
    p, x, y = context.params, context.node.inputs[0], context.node.outputs[0]
    fields = (p.input_zero_point, p.output_zero_point, p.multiplier, p.shift)
    quant = context.declare(call, "mcu_rsqrt_quant", "quant", _fields(fields))
    call.call = (f"mcu_rsqrt_s8(NULL, {quant}, {context.dims_ref(call, 'dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.pointer(y)})")


@emitter("LogSoftmax", sources=("log_softmax.c", "fixed_point_functions.c"))
def log_softmax(context: CallContext, call: KernelCall) -> None:
    p, x, y = context.params, context.node.inputs[0], context.node.outputs[0]
    fields = (p.input_multiplier, p.input_left_shift, p.reverse_scaling_divisor, p.reverse_scaling_shift,
              p.diff_min)
    quant = context.declare(call, "mcu_log_softmax_quant", "quant", _fields(fields))
    call.call = (f"mcu_log_softmax_s8(NULL, {quant}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")
