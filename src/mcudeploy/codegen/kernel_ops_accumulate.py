"""The emitters of an input-channel split Conv (:mod:`mcudeploy.passes.split_input_channels`):
``mcu_conv_accumulate_s8_s32`` per input-channel group and one
``mcu_requantize_accumulator_s32_s8`` (``runtime/src/conv_accumulate.c``).

A ConvAccumulate's third input is the bias ``[O]`` (first group: the kernel's ``bias``
argument) or the previous group's int32 accumulator (its ``acc_in``); X is passed whole, the
kernel reads the channel slice the node's ``channel_begin`` names.
"""
from __future__ import annotations

from .kernel_calls import CallContext, KernelCall, bias_pointer, channel_quant, emitter, in_out, kernel_function


@emitter("ConvAccumulate", sources=("conv_accumulate.c",))
def conv_accumulate(context: CallContext, call: KernelCall) -> None:
    node = context.node
    w, previous = node.inputs[1], node.input(2)
    quant, params = context.quant(call), context.params_ref(call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    w_dims = context.dims_ref(call, "w_dims", w.shape)
    is_bias = previous is not None and previous.rank == 1
    bias = bias_pointer(context) if is_bias else "NULL"
    accumulator = context.pointer(previous) if previous is not None and not is_bias else "NULL"
    call.call = (f"{kernel_function(node)}({context.scratch}, {params}, {quant}, {in_dims}, {in_pointer}, "
                 f"{w_dims}, {context.pointer(w)}, {bias}, {accumulator}, {out_dims}, {out_pointer})")


@emitter("RequantizeAccumulator", sources=("conv_accumulate.c",))
def requantize_accumulator(context: CallContext, call: KernelCall) -> None:
    quant, params = channel_quant(context, call), context.params_ref(call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = (f"{kernel_function(context.node)}({context.scratch}, {params}, {quant}, {in_dims}, {in_pointer}, "
                 f"{out_dims}, {out_pointer})")
