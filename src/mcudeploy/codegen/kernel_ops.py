"""The per-op emitters of :mod:`.kernel_calls`, one per runtime kernel family, in the order
of ``runtime/README.md``'s table. The function each node calls and the fields of its structs
come from :mod:`.kernel_table` (which the runtime's ctypes tests read too); an emitter only
lays out the call's arguments: dims, pointers, per-channel arrays, scratch.
"""
from __future__ import annotations

from ..errors import UnsupportedError
from .kernel_calls import (
    CallContext,
    KernelCall,
    bias_pointer,
    channel_quant,
    check_wide,
    emitter,
    in_out,
    kernel_function,
    quant_in_out_call,
)
from .kernel_table import reduced_axes, suffix


@emitter("Conv", sources=("conv.c",))
def conv(context: CallContext, call: KernelCall) -> None:
    w = context.node.inputs[1]
    check_wide(context)
    quant = channel_quant(context, call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    w_dims = context.dims_ref(call, "w_dims", w.shape)
    params = context.params_ref(call)
    call.call = (f"{kernel_function(context.node)}({context.scratch}, {params}, {quant}, {in_dims}, {in_pointer}, "
                 f"{w_dims}, {context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {out_pointer})")


@emitter("ConvTranspose", sources=("transpose_conv.c",))
def conv_transpose(context: CallContext, call: KernelCall) -> None:
    w = context.node.inputs[1]
    check_wide(context)
    function = kernel_function(context.node)
    quant = channel_quant(context, call)
    params = context.params_ref(call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    w_dims = context.dims_ref(call, "w_dims", w.shape)
    call.scratch_size = f"{function}_scratch_size({out_dims})"
    call.call = (f"{function}({context.scratch}, {params}, {quant}, {in_dims}, {in_pointer}, {w_dims}, "
                 f"{context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {out_pointer})")


@emitter("Gemm", sources=("fully_connected.c",))
def gemm(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    check_wide(context)
    rows, depth, units = x.size // x.shape[-1], x.shape[-1], w.shape[0]
    quant = channel_quant(context, call, "mcu_fc_quant")
    params = context.params_ref(call)
    in_dims = context.dims_ref(call, "in0_dims", (rows, 1, 1, depth))
    w_dims = context.dims_ref(call, "w_dims", (units, 1, 1, depth))
    out_dims = context.dims_ref(call, "out_dims", (rows, 1, 1, units))
    call.call = (f"{kernel_function(node)}({context.scratch}, {params}, {quant}, {in_dims}, {context.pointer(x)}, "
                 f"{w_dims}, {context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {context.pointer(y)})")


@emitter("Add", "Sub", "Mul", sources=("elementwise.c",))
def binary(context: CallContext, call: KernelCall) -> None:
    node = context.node
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    quant, params = context.quant(call), context.params_ref(call)
    call.call = (f"{kernel_function(node)}({context.scratch}, {params}, {quant}, "
                 f"{context.dims_ref(call, 'in0_dims', a.shape)}, {context.pointer(a)}, "
                 f"{context.dims_ref(call, 'in1_dims', b.shape)}, {context.pointer(b)}, "
                 f"{context.out_dims_ref(call, y.shape)}, {context.pointer(y)})")


@emitter("AveragePool", "MaxPool", sources=("pool.c",))
def pool(context: CallContext, call: KernelCall) -> None:
    params = context.params_ref(call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = (f"{kernel_function(context.node)}({context.scratch}, {params}, {in_dims}, {in_pointer}, "
                 f"{out_dims}, {out_pointer})")


@emitter("ReduceMean", "ReduceSum", sources=("mean.c",))
def reduce_mean(context: CallContext, call: KernelCall) -> None:
    """ReduceSum is TFLite SUM: the mean kernel with the undivided multiplier."""
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    kept = reduced_axes(x.shape, node.attrs["axes"])[1]
    params, quant = context.params_ref(call), context.quant(call)
    call.call = (f"{kernel_function(node)}(NULL, {params}, {quant}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', kept)}, {context.pointer(y)})")


@emitter("Softmax", sources=("softmax.c", "fixed_point_functions.c"))
def softmax(context: CallContext, call: KernelCall) -> None:
    if suffix(context.node.inputs[0]) != "s8":
        raise UnsupportedError(f"node {context.node.name!r}: Softmax with {context.node.inputs[0].dtype} "
                               "input has no C kernel (the runtime takes int8 input, int8 or int16 output)")
    quant_in_out_call(context, call)


@emitter("Sigmoid", "Tanh", sources=("smooth_step.c", "fixed_point_functions.c"))
def smooth_step(context: CallContext, call: KernelCall) -> None:
    if suffix(context.node.outputs[0]) == "s16":   # TFLM's interpolated sigmoid table, its own source file
        call.sources = ("smooth_step_s16.c",)
    quant_in_out_call(context, call)


emitter("HardSwish", sources=("hard_swish.c",))(quant_in_out_call)
emitter("LeakyRelu", sources=("leaky_relu.c",))(quant_in_out_call)
