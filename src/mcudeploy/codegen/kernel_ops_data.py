"""Emitters of :mod:`.kernel_calls` for quantize / dequantize / requantize and the data
movement kernels (reshape, transpose, slice, pad, concat, resize, gather, tile / expand). Functions and struct
fields come from :mod:`.kernel_table`, which ``runtime/tests/c_runners.py`` reads too."""
from __future__ import annotations

from ..errors import UnsupportedError
from ..kernels.emitted_arrays import call_arrays
from .kernel_calls import CallContext, KernelCall, c_initializer, emitter, kernel_function, params_itemsize_in_out_call
from .kernel_table import concat_quants, suffix


@emitter("QuantizeLinear", "DequantizeLinear", sources=("quantize.c",))
def quantize_linear(context: CallContext, call: KernelCall) -> None:
    """``function(NULL, &quant, &dims, x, y)``: float <-> integer, or integer -> integer requantize."""
    x, y = context.node.inputs[0], context.node.outputs[0]
    if context.node.op == "QuantizeLinear":      # declaration order kept as it was (golden files)
        dims, quant = context.dims_ref(call, "dims", x.shape), context.quant(call)
    else:
        quant = context.quant(call)
        dims = context.dims_ref(call, "dims", x.shape)
    call.call = f"{kernel_function(context.node)}(NULL, {quant}, {dims}, {context.pointer(x)}, {context.pointer(y)})"


@emitter("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", sources=("reshape.c",))
def reshape(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    dims = context.dims_ref(call, "dims", (x.size,))
    call.call = (f"{kernel_function(context.node)}(NULL, {dims}, {x.dtype.itemsize}, {context.pointer(x)}, "
                 f"{context.pointer(y)})")


emitter("Transpose", sources=("transpose.c",))(params_itemsize_in_out_call)
emitter("Slice", sources=("strided_slice.c",))(params_itemsize_in_out_call)


@emitter("Pad", sources=("pad.c",))
def pad(context: CallContext, call: KernelCall) -> None:
    x, y = context.node.inputs[0], context.node.outputs[0]
    params = context.params_ref(call)
    call.call = (f"{kernel_function(context.node)}(NULL, {params}, {context.dims_ref(call, 'in0_dims', x.shape)}, "
                 f"{context.pointer(x)}, {context.dims_ref(call, 'out_dims', y.shape)}, {context.pointer(y)})")


@emitter("Concat", sources=("concat.c",))
def concat(context: CallContext, call: KernelCall) -> None:
    node, y = context.node, context.node.outputs[0]
    count = len(node.inputs)
    entries = ", ".join(c_initializer(entry) for entry in concat_quants(context.params))
    kind = "int8_t" if suffix(y) == "s8" else "int16_t"
    name = context.symbol
    params = context.params_ref(call)
    call.declarations += [
        f"static const mcu_concat_quant {name}_quant[{count}] = {{{entries}}};",
        f"static const mcu_dims {name}_in_dims[{count}] = {{"
        + ", ".join(context.dims(x.shape) for x in node.inputs) + "};"]
    pointers = ", ".join(f"(const {kind} *){context.pointer(x)}" for x in node.inputs)
    call.call = (f"{kernel_function(node)}(NULL, {params}, {name}_quant, {name}_in_dims, "
                 f"(const {kind} *const[{count}]){{{pointers}}}, {context.dims_ref(call, 'out_dims', y.shape)}, "
                 f"{context.pointer(y)})")


@emitter("Resize", sources=("resize.c",))
def resize(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    params = context.params_ref(call)
    in_dims, out_dims = context.dims_ref(call, "in0_dims", x.shape), context.out_dims_ref(call, y.shape)
    itemsize = f"{x.dtype.itemsize}, " if node.attrs["mode"] == "nearest" else ""   # nearest moves any type
    call.call = (f"{kernel_function(node)}(NULL, {params}, {itemsize}{in_dims}, {context.pointer(x)}, "
                 f"{out_dims}, {context.pointer(y)})")


def _indices(context: CallContext, call: KernelCall) -> str:
    """The C expression of Gather's int32 indices: an int32 tensor (constant or computed),
    or the values of an int64 constant copied to an int32 array."""
    indices = context.node.inputs[1]
    if indices.const is not None and str(indices.dtype) != "int32":
        return context.int_array(call, "indices", call_arrays(context.node, context.params)["indices"],
                                 "gather indices")
    if str(indices.dtype) != "int32":
        raise UnsupportedError(f"node {context.node.name!r} (Gather): computed {indices.dtype} indices have "
                               "no C kernel (the runtime reads int32 indices)")
    return context.pointer(indices)


@emitter("Gather", sources=("gather.c",))
def gather(context: CallContext, call: KernelCall) -> None:
    node = context.node
    x, y = node.inputs[0], node.outputs[0]
    params = context.params_ref(call)
    call.call = (f"{kernel_function(node)}(NULL, {params}, {x.dtype.itemsize}, "
                 f"{context.dims_ref(call, 'in0_dims', x.shape)}, {context.pointer(x)}, {node.inputs[1].size}, "
                 f"{_indices(context, call)}, {context.pointer(y)})")


emitter("Tile", "Expand", sources=("gather.c",))(params_itemsize_in_out_call)   # Expand: a Tile by out / in
