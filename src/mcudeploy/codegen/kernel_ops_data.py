"""Emitters of :mod:`.kernel_calls` for quantize / dequantize / requantize and the data
movement kernels (reshape, transpose, slice, pad, concat, resize)."""
from __future__ import annotations

from ..errors import UnsupportedError
from .c_literals import c_float, c_int
from .kernel_calls import PAD_MODES, CallContext, KernelCall, emitter, suffix


def _per_tensor(context: CallContext, array, what: str):
    if array.size != 1:
        raise UnsupportedError(f"node {context.node.name!r} ({context.node.op}): per-channel {what} "
                               "has no C kernel")
    return array.reshape(-1)[0]


@emitter("QuantizeLinear", sources=("quantize.c",))
def quantize_linear(context: CallContext, call: KernelCall) -> None:
    node, p = context.node, context.params
    x, y = node.inputs[0], node.outputs[0]
    dims = context.dims_ref(call, "dims", x.shape)
    if str(x.dtype) == "float32":
        body = "{" + (f"{c_float(_per_tensor(context, p.scale, 'quantization'))}, "
                      f"{c_int(_per_tensor(context, p.zero_point, 'quantization'))}, {int(p.round_half_even)}") + "}"
        quant = context.declare(call, "mcu_affine_quant", "quant", body)
        call.call = f"mcu_quantize_f32_{suffix(y)}(NULL, {quant}, {dims}, {context.pointer(x)}, {context.pointer(y)})"
        return
    fields = (p.input_zero_point, p.output_zero_point, p.multiplier, p.shift)
    quant = context.declare(call, "mcu_requantize_quant", "quant", "{" + ", ".join(c_int(v) for v in fields) + "}")
    call.call = (f"mcu_requantize_{suffix(x)}_{suffix(y)}(NULL, {quant}, {dims}, {context.pointer(x)}, "
                 f"{context.pointer(y)})")


@emitter("DequantizeLinear", sources=("quantize.c",))
def dequantize_linear(context: CallContext, call: KernelCall) -> None:
    node, p = context.node, context.params
    x, y = node.inputs[0], node.outputs[0]
    body = "{" + (f"{c_float(_per_tensor(context, p.scale, 'dequantization'))}, "
                  f"{c_int(_per_tensor(context, p.zero_point, 'dequantization'))}, 0") + "}"
    quant = context.declare(call, "mcu_affine_quant", "quant", body)
    call.call = (f"mcu_dequantize_{suffix(x)}_f32(NULL, {quant}, {context.dims_ref(call, 'dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.pointer(y)})")


@emitter("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", sources=("reshape.c",))
def reshape(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    dims = context.dims_ref(call, "dims", (x.size,))
    call.call = f"mcu_reshape(NULL, {dims}, {x.dtype.itemsize}, {context.pointer(x)}, {context.pointer(y)})"


@emitter("Transpose", sources=("transpose.c",))
def transpose(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    pad = 4 - x.rank
    perm = list(range(pad)) + [pad + p for p in context.node.attrs["perm"]]
    params = context.declare(call, "mcu_transpose_params", "params", "{{" + ", ".join(map(str, perm)) + "}}")
    call.call = (f"mcu_transpose(NULL, {params}, {x.dtype.itemsize}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Slice", sources=("strided_slice.c",))
def slice_(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    pad = 4 - x.rank
    begin, stride = [0, 0, 0, 0], [1, 1, 1, 1]
    for start, end, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        axis %= x.rank
        selected = range(x.shape[axis])[slice(start, end, step)]
        begin[pad + axis], stride[pad + axis] = selected.start, selected.step
    body = "{{" + ", ".join(map(str, begin)) + "}, {" + ", ".join(map(str, stride)) + "}}"
    params = context.declare(call, "mcu_strided_slice_params", "params", body)
    call.call = (f"mcu_strided_slice(NULL, {params}, {x.dtype.itemsize}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Pad", sources=("pad.c",))
def pad(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    before = [0] * (4 - x.rank) + list(node.attrs["pads"][:x.rank])
    body = ("{{" + ", ".join(map(str, before)) + "}, " + PAD_MODES[node.attrs["mode"]] + ", "
            + c_int(context.params.pad_value) + "}")
    params = context.declare(call, "mcu_pad_params", "params", body)
    call.call = (f"mcu_pad_{suffix(y)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Concat", sources=("concat.c",))
def concat(context: CallContext, call: KernelCall) -> None:
    node, y = context.node, context.node.outputs[0]
    axis = 4 - y.rank + node.attrs["axis"] % y.rank
    count = len(node.inputs)
    entries = ["{0, {0, 0, 0, 0}}" if plan is None else
               "{1, {" + ", ".join(c_int(v) for v in (plan[0], plan[3], plan[1], plan[2])) + "}}"
               for plan in context.params.requantize]
    kind = "int8_t" if suffix(y) == "s8" else "int16_t"
    name = context.symbol
    call.declarations += [
        f"static const mcu_concat_params {name}_params = {{{axis}, {count}}};",
        f"static const mcu_concat_quant {name}_quant[{count}] = {{{', '.join(entries)}}};",
        f"static const mcu_dims {name}_in_dims[{count}] = {{"
        + ", ".join(context.dims(x.shape) for x in node.inputs) + "};"]
    pointers = ", ".join(f"(const {kind} *){context.pointer(x)}" for x in node.inputs)
    call.call = (f"mcu_concat_{suffix(y)}(NULL, &{name}_params, {name}_quant, {name}_in_dims, "
                 f"(const {kind} *const[{count}]){{{pointers}}}, {context.dims_ref(call, 'out_dims', y.shape)}, "
                 f"{context.pointer(y)})")


@emitter("Resize", sources=("resize.c",))
def resize(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    body = "{" + f"{int(context.params.align_corners)}, {int(context.params.half_pixel_centers)}" + "}"
    params = context.declare(call, "mcu_resize_params", "params", body)
    in_dims, out_dims = context.dims_ref(call, "in0_dims", x.shape), context.dims_ref(call, "out_dims", y.shape)
    if node.attrs["mode"] == "nearest":
        call.call = (f"mcu_resize_nearest(NULL, {params}, {x.dtype.itemsize}, {in_dims}, {context.pointer(x)}, "
                     f"{out_dims}, {context.pointer(y)})")
    else:
        call.call = (f"mcu_resize_bilinear_{suffix(y)}(NULL, {params}, {in_dims}, {context.pointer(x)}, "
                     f"{out_dims}, {context.pointer(y)})")
