"""One C kernel call per IR op, for the bit-exact tests: ``run_node(runtime, node, params,
inputs)`` maps an IR node (NHWC, quantized), the parameters its Python integer kernel's
``prepare`` produced and its input arrays (no batch axis) onto the C structs of
``mcu_runtime.h`` and returns the C output array. Raises ``NotImplementedError`` for
combinations the C runtime does not cover (so tests can tell "missing" from "wrong").

The function each node calls and every field of its by-value structs come from
:mod:`mcudeploy.codegen.kernel_table`, the table the code generator prints as C: these tests
check the mapping the generated code uses, not a second copy of it. Only the plumbing
(arrays, pointers, dims) is written here.
"""
from __future__ import annotations

import ctypes

import numpy as np
from mcu_ctypes import (
    ChannelQuant,
    ConcatQuant,
    Context,
    Dims,
    FcQuant,
    Runtime,
    dims,
    from_table,
    int_array,
    int_pointer,
)

from mcudeploy.codegen.kernel_table import (
    FUNCTIONS,
    concat_quants,
    kernel_function,
    params_struct,
    quant_struct,
    reduced_axes,
)
from mcudeploy.errors import UnsupportedError

RUNNERS = {}


def runner(*ops: str):
    def register(function):
        for op in ops:
            RUNNERS[op] = function
        return function
    return register


def run_node(runtime: Runtime, node, params, inputs: list, out: np.ndarray | None = None) -> np.ndarray:
    """The C kernel's output for ``node`` on ``inputs`` (arrays of the declared shapes).
    ``out``: where the kernel writes (default: a new dense array); a channel slice
    ``wide[..., k:k + c]`` of a wider buffer makes the call pass an out c_stride (the
    runners that :func:`out_dims` serves: conv, pool, resize, add / sub / mul, slice, and max / min,
    whose kernel refuses it)."""
    if node.op not in RUNNERS or node.op not in FUNCTIONS:
        raise NotImplementedError(f"no C kernel for {node.op}")
    inputs = [None if x is None else np.ascontiguousarray(x) for x in inputs]
    if out is None:
        out = np.zeros(node.outputs[0].shape, dtype=node.outputs[0].dtype.numpy)
    try:
        RUNNERS[node.op](runtime, node, params, inputs, out)
    except UnsupportedError as error:        # the table refuses what the C runtime has no kernel for
        raise NotImplementedError(str(error)) from error
    return out


def out_dims(out: np.ndarray) -> Dims:
    """The dims of an output array; a channel slice of a wider buffer (pixels a constant
    stride apart) gets that stride as its c_stride (mcu_runtime.h)."""
    result = dims(out.shape)
    if not out.flags.c_contiguous:
        result.c_stride = out.strides[-2] // out.itemsize
    return result


def _call(runtime: Runtime, node, *args) -> None:
    runtime.call(kernel_function(node), *args)


def _params(node, params):
    return from_table(params_struct(node, params))


def _quant(node, params):
    return from_table(quant_struct(node, params))


def _channel_quant(params, keep: list) -> ChannelQuant:
    multiplier, shift = int_array(params.output_multiplier), int_array(params.output_shift)
    keep += [multiplier, shift]
    return ChannelQuant(input_offset=params.input_offset, output_offset=params.output_offset,
                        multiplier=int_pointer(multiplier), shift=int_pointer(shift))


def _bias(inputs: list, wide: bool) -> np.ndarray | None:
    if len(inputs) < 3 or inputs[2] is None:
        return None
    return np.ascontiguousarray(inputs[2].reshape(-1), dtype=np.int64 if wide else np.int32)


def _wide(params, x: np.ndarray) -> bool:
    wide = x.dtype == np.int16
    if wide and not params.int64_accumulator:
        raise NotImplementedError("16x8 with an int32 bias (int32 accumulator) has no C kernel")
    return wide


@runner("Conv")
def conv(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    wide = _wide(params, x)
    keep = []
    _call(runtime, node, None, _params(node, params), _channel_quant(params, keep), dims(x.shape), x,
          dims(w.shape), w, _bias(inputs, wide), out_dims(out), out)


@runner("ConvAccumulate")
def conv_accumulate(runtime, node, params, inputs, out):
    """The third input is the bias [O] (passed as bias) or the previous accumulator (acc_in)."""
    x, w = inputs[0], inputs[1]
    previous = inputs[2] if len(inputs) > 2 else None
    bias = previous if previous is not None and previous.ndim == 1 else None
    accumulator = previous if previous is not None and previous.ndim > 1 else None
    _call(runtime, node, None, _params(node, params), _quant(node, params), dims(x.shape), x, dims(w.shape), w,
          bias, accumulator, dims(out.shape), out)


@runner("RequantizeAccumulator")
def requantize_accumulator(runtime, node, params, inputs, out):
    keep: list = []
    _call(runtime, node, None, _params(node, params), _channel_quant(params, keep), dims(inputs[0].shape),
          inputs[0], dims(out.shape), out)


@runner("ConvTranspose")
def conv_transpose(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    wide = _wide(params, x)
    keep = []
    quant = _channel_quant(params, keep)
    scratch_size = runtime.library[f"{kernel_function(node)}_scratch_size"]
    scratch_size.restype = ctypes.c_int32
    size = scratch_size(ctypes.byref(dims(out.shape)))
    scratch = np.zeros(max(size, 1), dtype=np.uint8)
    context = Context(buffer=scratch.ctypes.data, size=scratch.size)
    _call(runtime, node, context, _params(node, params), quant, dims(x.shape), x, dims(w.shape), w,
          _bias(inputs, wide), dims(out.shape), out)


@runner("Gemm")
def gemm(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    wide = _wide(params, x)
    multiplier, shift = int_array(params.output_multiplier), int_array(params.output_shift)
    quant = FcQuant(input_offset=params.input_offset, weights_offset=params.weights_offset,
                    output_offset=params.output_offset, multiplier=int_pointer(multiplier), shift=int_pointer(shift))
    rows, depth, units = x.size // x.shape[-1], x.shape[-1], w.shape[0]
    _call(runtime, node, None, _params(node, params), quant, Dims(rows, 1, 1, depth), x, Dims(units, 1, 1, depth),
          w, _bias(inputs, wide), Dims(rows, 1, 1, units), out)


@runner("Add", "Sub", "Mul")
def binary(runtime, node, params, inputs, out):
    _call(runtime, node, None, _params(node, params), _quant(node, params), dims(inputs[0].shape), inputs[0],
          dims(inputs[1].shape), inputs[1], out_dims(out), out)


@runner("AveragePool", "MaxPool")
def pool(runtime, node, params, inputs, out):
    _call(runtime, node, None, _params(node, params), dims(inputs[0].shape), inputs[0], out_dims(out), out)


@runner("ReduceMean", "ReduceSum")
def reduce_mean(runtime, node, params, inputs, out):
    x = inputs[0]
    kept = reduced_axes(x.shape, node.attrs["axes"])[1]
    flat = np.zeros(kept, dtype=out.dtype)
    _call(runtime, node, None, _params(node, params), _quant(node, params), dims(x.shape), x, dims(kept), flat)
    out[...] = flat.reshape(out.shape)


@runner("Softmax", "Sigmoid", "Tanh", "HardSwish", "LeakyRelu", "LogSoftmax")
def unary(runtime, node, params, inputs, out):
    _call(runtime, node, None, _quant(node, params), dims(inputs[0].shape), inputs[0], dims(out.shape), out)


@runner("QuantizeLinear", "DequantizeLinear")
def quantize_linear(runtime, node, params, inputs, out):
    _call(runtime, node, None, _quant(node, params), dims(inputs[0].shape), inputs[0], out)


@runner("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")
def reshape(runtime, node, params, inputs, out):
    x = inputs[0]
    _call(runtime, node, None, dims((x.size,)), x.itemsize, x, out)


@runner("Transpose", "Slice", "Tile", "Expand")
def move(runtime, node, params, inputs, out):
    x = inputs[0]
    if out.size:     # Slice honours an out c_stride (a 4-D channel slice of a wider buffer)
        shape = out_dims(out) if node.op == "Slice" and out.ndim == 4 else dims(out.shape)
        _call(runtime, node, None, _params(node, params), x.itemsize, dims(x.shape), x, shape, out)


@runner("Pad")
def pad(runtime, node, params, inputs, out):
    _call(runtime, node, None, _params(node, params), dims(inputs[0].shape), inputs[0], dims(out.shape), out)


@runner("Concat")
def concat(runtime, node, params, inputs, out):
    count = len(inputs)
    in_dims = (type(dims(out.shape)) * count)(*[dims(x.shape) for x in inputs])
    kind = np.ctypeslib.as_ctypes_type(out.dtype)
    pointers = (ctypes.POINTER(kind) * count)(*[x.ctypes.data_as(ctypes.POINTER(kind)) for x in inputs])
    quant = (ConcatQuant * count)(*[from_table(entry) for entry in concat_quants(params)])
    _call(runtime, node, None, _params(node, params), quant, in_dims, pointers, dims(out.shape), out)


@runner("Resize")
def resize(runtime, node, params, inputs, out):
    x = inputs[0]
    itemsize = (x.itemsize,) if node.attrs["mode"] == "nearest" else ()     # nearest moves any type
    _call(runtime, node, None, _params(node, params), *itemsize, dims(x.shape), x, out_dims(out), out)


# -- kernels added for issue 15 (binary_math.c, reduce.c, gather.c, unary_math.c) --------------
@runner("Max", "Min")
def max_or_min(runtime, node, params, inputs, out):
    _call(runtime, node, None, dims(inputs[0].shape), inputs[0], dims(inputs[1].shape), inputs[1],
          out_dims(out), out)


@runner("SquaredDifference")
def squared_difference(runtime, node, params, inputs, out):
    _call(runtime, node, None, _quant(node, params), dims(inputs[0].shape), inputs[0], dims(inputs[1].shape),
          inputs[1], dims(out.shape), out)


@runner("ReduceMax", "ReduceMin")
def reduce_extreme(runtime, node, params, inputs, out):
    x = inputs[0]
    kept = reduced_axes(x.shape, node.attrs["axes"])[1]
    flat = np.zeros(kept, dtype=out.dtype)
    _call(runtime, node, None, _params(node, params), dims(x.shape), x, dims(kept), flat)
    out[...] = flat.reshape(out.shape)


@runner("ArgMax", "ArgMin")
def arg_extreme(runtime, node, params, inputs, out):
    x = inputs[0]
    if out.dtype != np.int32:
        raise NotImplementedError("ArgMax / ArgMin with int64 output has no C kernel (TFLM gives int32)")
    struct = params_struct(node, params)
    kept = list((1,) * (4 - x.ndim) + x.shape)
    kept[struct.value("axis")] = 1
    flat = np.zeros(kept, dtype=np.int32)
    _call(runtime, node, None, from_table(struct), dims(x.shape), x, dims(tuple(kept)), flat)
    out[...] = flat.reshape(out.shape)


@runner("Gather")
def gather(runtime, node, params, inputs, out):
    x, indices = inputs
    flat = np.ascontiguousarray(indices.reshape(-1), dtype=np.int32)
    _call(runtime, node, None, _params(node, params), x.itemsize, dims(x.shape), x, ctypes.c_int32(flat.size),
          flat, out)


@runner("Abs", "Rsqrt")
def elementwise_unary(runtime, node, params, inputs, out):
    _call(runtime, node, None, _quant(node, params), dims(out.shape), inputs[0], out)
