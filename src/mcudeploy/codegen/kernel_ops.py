"""The per-op emitters of :mod:`.kernel_calls`, one per runtime kernel family, in the order
of ``runtime/README.md``'s table. Each copies the prepared parameters into the structs of
``runtime/include/mcu_runtime.h`` and writes the call (see ``runtime/tests/c_runners.py``
for the same mapping run through ctypes).
"""
from __future__ import annotations

from ..errors import UnsupportedError
from .c_literals import c_int
from .kernel_calls import (
    CallContext,
    KernelCall,
    activation,
    bias_pointer,
    channel_quant,
    check_wide,
    emitter,
    in_out,
    suffix,
)


@emitter("Conv", sources=("conv.c",))
def conv(context: CallContext, call: KernelCall) -> None:
    node, attrs = context.node, context.node.attrs
    x, w = node.inputs[0], node.inputs[1]
    check_wide(context)
    kind = suffix(x)
    geometry = [*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["dilations"]]
    depthwise = w.shape[3] == 1 and attrs["group"] == x.shape[3] and attrs["group"] > 1
    quant = channel_quant(context, call)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    w_dims = context.dims_ref(call, "w_dims", w.shape)
    if depthwise:
        geometry.append(w.shape[0] // x.shape[3])
        body = "{" + ", ".join(map(str, geometry)) + f", {activation(context.params)}" + "}"
        params, function = context.declare(call, "mcu_depthwise_params", "params", body), "depthwise_conv2d"
    else:
        body = "{" + ", ".join(map(str, geometry)) + f", {activation(context.params)}" + "}"
        params, function = context.declare(call, "mcu_conv_params", "params", body), "conv2d"
    call.call = (f"mcu_{function}_{kind}({context.scratch}, {params}, {quant}, {in_dims}, {in_pointer}, {w_dims}, "
                 f"{context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {out_pointer})")


@emitter("ConvTranspose", sources=("transpose_conv.c",))
def conv_transpose(context: CallContext, call: KernelCall) -> None:
    node, attrs = context.node, context.node.attrs
    w = node.inputs[1]
    check_wide(context)
    kind = suffix(node.inputs[0])
    quant = channel_quant(context, call)
    geometry = [*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["dilations"]]
    body = "{" + ", ".join(map(str, geometry)) + f", {activation(context.params)}" + "}"
    params = context.declare(call, "mcu_conv_params", "params", body)
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    w_dims = context.dims_ref(call, "w_dims", w.shape)
    call.scratch_size = f"mcu_transpose_conv2d_{kind}_scratch_size({out_dims})"
    call.call = (f"mcu_transpose_conv2d_{kind}({context.scratch}, {params}, {quant}, {in_dims}, "
                 f"{in_pointer}, {w_dims}, {context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {out_pointer})")


@emitter("Gemm", sources=("fully_connected.c",))
def gemm(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    check_wide(context)
    rows, depth, units = x.size // x.shape[-1], x.shape[-1], w.shape[0]
    quant = channel_quant(context, call, "mcu_fc_quant")
    params = context.declare(call, "mcu_fc_params", "params", "{" + activation(context.params) + "}")
    in_dims = context.dims_ref(call, "in0_dims", (rows, 1, 1, depth))
    w_dims = context.dims_ref(call, "w_dims", (units, 1, 1, depth))
    out_dims = context.dims_ref(call, "out_dims", (rows, 1, 1, units))
    call.call = (f"mcu_fully_connected_{suffix(x)}({context.scratch}, {params}, {quant}, {in_dims}, {context.pointer(x)}, "
                 f"{w_dims}, {context.pointer(w)}, {bias_pointer(context)}, {out_dims}, {context.pointer(y)})")


def _binary(context: CallContext, call: KernelCall, function: str, quant: str) -> None:
    node = context.node
    a, b, y = node.inputs[0], node.inputs[1], node.outputs[0]
    params = context.declare(call, "mcu_elementwise_params", "params", "{" + activation(context.params) + "}")
    call.call = (f"{function}_{suffix(y)}({context.scratch}, {params}, {quant}, {context.dims_ref(call, 'in0_dims', a.shape)}, "
                 f"{context.pointer(a)}, {context.dims_ref(call, 'in1_dims', b.shape)}, {context.pointer(b)}, "
                 f"{context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Add", "Sub", sources=("elementwise.c",))
def add_or_sub(context: CallContext, call: KernelCall) -> None:
    p = context.params
    fields = (p.left_shift, p.input1_offset, p.input2_offset, p.output_offset, p.input1_multiplier,
              p.input1_shift, p.input2_multiplier, p.input2_shift, p.output_multiplier, p.output_shift)
    quant = context.declare(call, "mcu_add_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    _binary(context, call, f"mcu_{context.node.op.lower()}", quant)


@emitter("Mul", sources=("elementwise.c",))
def mul(context: CallContext, call: KernelCall) -> None:
    p = context.params
    fields = (p.input1_offset, p.input2_offset, p.output_offset, p.output_multiplier, p.output_shift)
    quant = context.declare(call, "mcu_mul_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    _binary(context, call, "mcu_mul", quant)


@emitter("AveragePool", "MaxPool", sources=("pool.c",))
def pool(context: CallContext, call: KernelCall) -> None:
    attrs = context.node.attrs
    fields = [*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["kernel_shape"]]
    body = "{" + ", ".join(map(str, fields)) + f", {activation(context.params)}" + "}"
    params = context.declare(call, "mcu_pool_params", "params", body)
    kind = "avg" if context.node.op == "AveragePool" else "max"
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = (f"mcu_{kind}_pool_{suffix(context.node.outputs[0])}({context.scratch}, {params}, {in_dims}, {in_pointer}, "
                 f"{out_dims}, {out_pointer})")


@emitter("ReduceMean", sources=("mean.c",))
def reduce_mean(context: CallContext, call: KernelCall) -> None:
    node, p = context.node, context.params
    x, y = node.inputs[0], node.outputs[0]
    pad = 4 - x.rank
    axes = {pad + a % x.rank for a in node.attrs["axes"]}
    full = (1,) * pad + x.shape
    kept = tuple(1 if axis in axes else full[axis] for axis in range(4))
    params = context.declare(call, "mcu_mean_params", "params", "{" + str(sum(1 << a for a in axes)) + "}")
    fields = (p.input_zero_point, p.output_zero_point, p.output_multiplier, p.output_shift)
    quant = context.declare(call, "mcu_mean_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    call.call = (f"mcu_mean_{suffix(y)}(NULL, {params}, {quant}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', kept)}, {context.pointer(y)})")


@emitter("Softmax", sources=("softmax.c", "fixed_point_functions.c"))
def softmax(context: CallContext, call: KernelCall) -> None:
    if suffix(context.node.inputs[0]) != "s8":
        raise UnsupportedError(f"node {context.node.name!r}: Softmax with {context.node.inputs[0].dtype} "
                               "input has no C kernel (the runtime takes int8 input, int8 or int16 output)")
    p = context.params
    fields = (p.input_multiplier, p.input_left_shift, p.diff_min)
    quant = context.declare(call, "mcu_softmax_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    function = "mcu_softmax_s8" if suffix(context.node.outputs[0]) == "s8" else "mcu_softmax_s8_s16"
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = f"{function}(NULL, {quant}, {in_dims}, {in_pointer}, {out_dims}, {out_pointer})"


@emitter("Sigmoid", "Tanh", sources=("smooth_step.c", "fixed_point_functions.c"))
def smooth_step(context: CallContext, call: KernelCall) -> None:
    p, kind = context.params, suffix(context.node.outputs[0])
    fields: tuple[int, ...]
    if kind == "s16":   # TFLM's interpolated sigmoid table, its own source file
        ctype, fields = "mcu_smooth_step_s16_quant", (p.input_multiplier, p.input_left_shift)
        call.sources = ("smooth_step_s16.c",)
    else:               # gemmlowp fixed point on Q4.27
        ctype = "mcu_smooth_step_quant"
        fields = (p.input_zero_point, p.input_multiplier, p.input_left_shift, p.input_range_radius)
    quant = context.declare(call, ctype, "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    function = f"mcu_{'logistic' if context.node.op == 'Sigmoid' else 'tanh'}_{kind}"
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = f"{function}(NULL, {quant}, {in_dims}, {in_pointer}, {out_dims}, {out_pointer})"


@emitter("HardSwish", sources=("hard_swish.c",))
def hard_swish(context: CallContext, call: KernelCall) -> None:
    p = context.params
    fields = (p.input_zero_point, p.output_zero_point, p.output_multiplier_fixedpoint_int16,
              p.output_multiplier_exponent, p.reluish_multiplier_fixedpoint_int16, p.reluish_multiplier_exponent)
    quant = context.declare(call, "mcu_hard_swish_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = f"mcu_hard_swish_s8(NULL, {quant}, {in_dims}, {in_pointer}, {out_dims}, {out_pointer})"


@emitter("LeakyRelu", sources=("leaky_relu.c",))
def leaky_relu(context: CallContext, call: KernelCall) -> None:
    p = context.params
    fields = (p.input_zero_point, p.output_zero_point, p.output_multiplier_alpha, p.output_shift_alpha,
              p.output_multiplier_identity, p.output_shift_identity)
    quant = context.declare(call, "mcu_leaky_relu_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    in_dims, in_pointer, out_dims, out_pointer = in_out(context, call)
    call.call = (f"mcu_leaky_relu_{suffix(context.node.outputs[0])}(NULL, {quant}, {in_dims}, {in_pointer}, "
                 f"{out_dims}, {out_pointer})")
