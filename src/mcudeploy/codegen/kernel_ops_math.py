"""Emitters of :mod:`.kernel_calls` for the comparison, reduction and unary math kernels: Max /
Min, SquaredDifference (``binary_math.c``), ReduceMax / ReduceMin / ArgMax / ArgMin
(``reduce.c``), Abs / Rsqrt (``unary_math.c``), LogSoftmax (``log_softmax.c``). Functions and
struct fields come from :mod:`.kernel_table`, which ``runtime/tests/c_runners.py`` reads too.
"""
from __future__ import annotations

from ..errors import UnsupportedError
from .kernel_calls import (
    CallContext,
    KernelCall,
    emitter,
    kernel_function,
    quant_in_out_call,
)
from .kernel_table import padded_axis, reduced_axes


def _binary_arguments(context: CallContext, call: KernelCall) -> str:
    node = context.node
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    return (f"{context.dims_ref(call, 'in0_dims', a.shape)}, {context.pointer(a)}, "
            f"{context.dims_ref(call, 'in1_dims', b.shape)}, {context.pointer(b)}, "
            f"{context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)}")


@emitter("Max", "Min", sources=("binary_math.c",))
def max_or_min(context: CallContext, call: KernelCall) -> None:
    call.call = f"{kernel_function(context.node)}(NULL, {_binary_arguments(context, call)})"


@emitter("SquaredDifference", sources=("binary_math.c",))
def squared_difference(context: CallContext, call: KernelCall) -> None:
    quant = context.quant(call)
    call.call = f"{kernel_function(context.node)}(NULL, {quant}, {_binary_arguments(context, call)})"


@emitter("ReduceMax", "ReduceMin", sources=("reduce.c",))
def reduce_extreme(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    kept = reduced_axes(x.shape, context.node.attrs["axes"])[1]
    params = context.params_ref(call)
    call.call = (f"{kernel_function(context.node)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', kept)}, {context.pointer(y)})")


@emitter("ArgMax", "ArgMin", sources=("reduce.c",))
def arg_extreme(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    if str(y.dtype) != "int32":
        raise UnsupportedError(f"node {node.name!r} ({node.op}): {y.dtype} indices have no C kernel; "
                               "the runtime (like TFLite Micro) writes int32 (TFLite ARG_MAX output_type "
                               "int32)")
    kept = list((1,) * (4 - x.rank) + x.shape)
    kept[padded_axis(x.rank, node.attrs["axis"])] = 1
    params = context.params_ref(call)
    call.call = (f"{kernel_function(node)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', tuple(kept))}, {context.pointer(y)})")


def _elementwise_unary(context: CallContext, call: KernelCall) -> None:
    """``function(NULL, &quant, &dims, in, out)``: input and output of the same shape."""
    x, y = context.node.inputs[0], context.node.outputs[0]
    quant = context.quant(call)
    call.call = (f"{kernel_function(context.node)}(NULL, {quant}, {context.dims_ref(call, 'dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.pointer(y)})")


emitter("Abs", "Rsqrt", sources=("unary_math.c",))(_elementwise_unary)
emitter("LogSoftmax", sources=("log_softmax.c", "fixed_point_functions.c"))(quant_in_out_call)
