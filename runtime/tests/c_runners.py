"""One C kernel call per IR op, for the bit-exact tests: ``run_node(runtime, node, params,
inputs)`` maps an IR node (NHWC, quantized), the parameters its Python integer kernel's
``prepare`` produced and its input arrays (no batch axis) onto the C structs of
``mcu_runtime.h`` and returns the C output array. Raises ``NotImplementedError`` for
combinations the C runtime does not cover (so tests can tell "missing" from "wrong").
"""
from __future__ import annotations

import ctypes

import numpy as np
from mcu_ctypes import (
    PAD_MODES,
    SUFFIX,
    AbsQuant,
    ActivationParams,
    AddQuant,
    AffineQuant,
    ArgParams,
    ChannelQuant,
    ConcatParams,
    ConcatQuant,
    Context,
    ConvParams,
    DepthwiseParams,
    Dims,
    FcQuant,
    GatherParams,
    HardSwishQuant,
    LeakyReluQuant,
    LogSoftmaxQuant,
    MeanParams,
    MeanQuant,
    MulQuant,
    PadParams,
    PoolParams,
    ReduceParams,
    RequantizeQuant,
    ResizeParams,
    RsqrtQuant,
    Runtime,
    SliceParams,
    SmoothStepQuant,
    SmoothStepS16Quant,
    SoftmaxQuant,
    TileParams,
    TransposeParams,
    activation,
    dims,
    int_array,
    int_pointer,
)

RUNNERS = {}


def runner(*ops: str):
    def register(function):
        for op in ops:
            RUNNERS[op] = function
        return function
    return register


def run_node(runtime: Runtime, node, params, inputs: list) -> np.ndarray:
    """The C kernel's output for ``node`` on ``inputs`` (arrays of the declared shapes)."""
    if node.op not in RUNNERS:
        raise NotImplementedError(f"no C kernel for {node.op}")
    inputs = [None if x is None else np.ascontiguousarray(x) for x in inputs]
    out = np.zeros(node.outputs[0].shape, dtype=node.outputs[0].dtype.numpy)
    RUNNERS[node.op](runtime, node, params, inputs, out)
    return out


def _channel_quant(params, keep: list) -> ChannelQuant:
    multiplier, shift = int_array(params.output_multiplier), int_array(params.output_shift)
    keep += [multiplier, shift]
    return ChannelQuant(params.input_offset, params.output_offset, int_pointer(multiplier), int_pointer(shift))


def _bias(inputs: list, wide: bool) -> np.ndarray | None:
    if len(inputs) < 3 or inputs[2] is None:
        return None
    return np.ascontiguousarray(inputs[2].reshape(-1), dtype=np.int64 if wide else np.int32)


def _suffix_and_width(node, params, x: np.ndarray) -> tuple[str, bool]:
    suffix = SUFFIX[x.dtype]
    wide = suffix == "s16"
    if wide and not params.int64_accumulator:
        raise NotImplementedError("16x8 with an int32 bias (int32 accumulator) has no C kernel")
    return suffix, wide


@runner("Conv")
def conv(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    suffix, wide = _suffix_and_width(node, params, x)
    keep = []
    quant = _channel_quant(params, keep)
    attrs = node.attrs
    geometry = (*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["dilations"])
    depthwise = w.shape[3] == 1 and attrs["group"] == x.shape[3] and attrs["group"] > 1
    common = (quant, dims(x.shape), x, dims(w.shape), w, _bias(inputs, wide), dims(out.shape), out)
    if depthwise:
        conv_params = DepthwiseParams(*geometry, w.shape[0] // x.shape[3], activation(params))
        runtime.call(f"mcu_depthwise_conv2d_{suffix}", None, conv_params, *common)
    else:
        runtime.call(f"mcu_conv2d_{suffix}", None, ConvParams(*geometry, activation(params)), *common)


@runner("ConvTranspose")
def conv_transpose(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    suffix, wide = _suffix_and_width(node, params, x)
    keep = []
    quant = _channel_quant(params, keep)
    attrs = node.attrs
    conv_params = ConvParams(*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["dilations"],
                             activation(params))
    scratch_size = runtime.library[f"mcu_transpose_conv2d_{suffix}_scratch_size"]
    scratch_size.restype = ctypes.c_int32
    size = scratch_size(ctypes.byref(dims(out.shape)))
    scratch = np.zeros(max(size, 1), dtype=np.uint8)
    context = Context(scratch.ctypes.data, scratch.size)
    runtime.call(f"mcu_transpose_conv2d_{suffix}", context, conv_params, quant, dims(x.shape), x,
                 dims(w.shape), w, _bias(inputs, wide), dims(out.shape), out)


@runner("Gemm")
def gemm(runtime, node, params, inputs, out):
    x, w = inputs[0], inputs[1]
    suffix, wide = _suffix_and_width(node, params, x)
    multiplier, shift = int_array(params.output_multiplier), int_array(params.output_shift)
    quant = FcQuant(params.input_offset, params.weights_offset, params.output_offset,
                    int_pointer(multiplier), int_pointer(shift))
    rows, depth, units = x.size // x.shape[-1], x.shape[-1], w.shape[0]
    runtime.call(f"mcu_fully_connected_{suffix}", None, ActivationParams(activation(params)), quant,
                 Dims(rows, 1, 1, depth), x, Dims(units, 1, 1, depth), w, _bias(inputs, wide),
                 Dims(rows, 1, 1, units), out)


@runner("Add", "Sub")
def add_or_sub(runtime, node, params, inputs, out):
    p = params
    quant = AddQuant(p.left_shift, p.input1_offset, p.input2_offset, p.output_offset, p.input1_multiplier,
                     p.input1_shift, p.input2_multiplier, p.input2_shift, p.output_multiplier, p.output_shift)
    name = f"mcu_{node.op.lower()}_{SUFFIX[out.dtype]}"
    runtime.call(name, None, ActivationParams(activation(p)), quant, dims(inputs[0].shape), inputs[0],
                 dims(inputs[1].shape), inputs[1], dims(out.shape), out)


@runner("Mul")
def mul(runtime, node, params, inputs, out):
    p = params
    quant = MulQuant(p.input1_offset, p.input2_offset, p.output_offset, p.output_multiplier, p.output_shift)
    runtime.call(f"mcu_mul_{SUFFIX[out.dtype]}", None, ActivationParams(activation(p)), quant,
                 dims(inputs[0].shape), inputs[0], dims(inputs[1].shape), inputs[1], dims(out.shape), out)


@runner("AveragePool", "MaxPool")
def pool(runtime, node, params, inputs, out):
    attrs = node.attrs
    pool_params = PoolParams(*attrs["strides"], attrs["pads"][0], attrs["pads"][1], *attrs["kernel_shape"],
                             activation(params))
    kind = "avg" if node.op == "AveragePool" else "max"
    runtime.call(f"mcu_{kind}_pool_{SUFFIX[out.dtype]}", None, pool_params, dims(inputs[0].shape), inputs[0],
                 dims(out.shape), out)


@runner("ReduceMean")
def reduce_mean(runtime, node, params, inputs, out):
    x = inputs[0]
    pad = 4 - x.ndim
    axes = {pad + a % x.ndim for a in node.attrs["axes"]}
    in_dims = dims(x.shape)
    kept = [1 if axis in axes else getattr(in_dims, "nhwc"[axis]) for axis in range(4)]
    mask = sum(1 << axis for axis in axes)
    flat = np.zeros(kept, dtype=out.dtype)
    quant = MeanQuant(params.input_zero_point, params.output_zero_point, params.output_multiplier,
                      params.output_shift)
    runtime.call(f"mcu_mean_{SUFFIX[out.dtype]}", None, MeanParams(mask), quant, in_dims, x, dims(kept), flat)
    out[...] = flat.reshape(out.shape)


@runner("Softmax")
def softmax(runtime, node, params, inputs, out):
    name = "mcu_softmax_s8" if out.dtype == np.int8 else "mcu_softmax_s8_s16"
    quant = SoftmaxQuant(params.input_multiplier, params.input_left_shift, params.diff_min)
    runtime.call(name, None, quant, dims(inputs[0].shape), inputs[0], dims(out.shape), out)


@runner("Sigmoid", "Tanh")
def smooth_step(runtime, node, params, inputs, out):
    kind = SUFFIX[out.dtype]
    if kind == "s16":
        quant = SmoothStepS16Quant(params.input_multiplier, params.input_left_shift)
    else:
        quant = SmoothStepQuant(params.input_zero_point, params.input_multiplier, params.input_left_shift,
                                params.input_range_radius)
    name = f"mcu_{'logistic' if node.op == 'Sigmoid' else 'tanh'}_{kind}"
    runtime.call(name, None, quant, dims(inputs[0].shape), inputs[0], dims(out.shape), out)


@runner("HardSwish")
def hard_swish(runtime, node, params, inputs, out):
    p = params
    quant = HardSwishQuant(p.input_zero_point, p.output_zero_point, p.output_multiplier_fixedpoint_int16,
                           p.output_multiplier_exponent, p.reluish_multiplier_fixedpoint_int16,
                           p.reluish_multiplier_exponent)
    runtime.call("mcu_hard_swish_s8", None, quant, dims(inputs[0].shape), inputs[0], dims(out.shape), out)


@runner("LeakyRelu")
def leaky_relu(runtime, node, params, inputs, out):
    p = params
    quant = LeakyReluQuant(p.input_zero_point, p.output_zero_point, p.output_multiplier_alpha,
                           p.output_shift_alpha, p.output_multiplier_identity, p.output_shift_identity)
    runtime.call(f"mcu_leaky_relu_{SUFFIX[out.dtype]}", None, quant, dims(inputs[0].shape), inputs[0],
                 dims(out.shape), out)


@runner("QuantizeLinear")
def quantize_linear(runtime, node, params, inputs, out):
    x = inputs[0]
    if x.dtype == np.float32:
        if params.scale.size != 1:
            raise NotImplementedError("per-channel float quantization has no C kernel")
        quant = AffineQuant(float(params.scale.reshape(-1)[0]), int(params.zero_point.reshape(-1)[0]),
                            int(params.round_half_even))
        runtime.call(f"mcu_quantize_f32_{SUFFIX[out.dtype]}", None, quant, dims(x.shape), x, out)
        return
    quant = RequantizeQuant(params.input_zero_point, params.output_zero_point, params.multiplier, params.shift)
    runtime.call(f"mcu_requantize_{SUFFIX[x.dtype]}_{SUFFIX[out.dtype]}", None, quant, dims(x.shape), x, out)


@runner("DequantizeLinear")
def dequantize_linear(runtime, node, params, inputs, out):
    if params.scale.size != 1:
        raise NotImplementedError("per-channel dequantization has no C kernel")
    quant = AffineQuant(float(params.scale.reshape(-1)[0]), int(params.zero_point.reshape(-1)[0]))
    x = inputs[0]
    runtime.call(f"mcu_dequantize_{SUFFIX[x.dtype]}_f32", None, quant, dims(x.shape), x, out)


@runner("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")
def reshape(runtime, node, params, inputs, out):
    x = inputs[0]
    runtime.call("mcu_reshape", None, dims((x.size,)), x.itemsize, x, out)


@runner("Transpose")
def transpose(runtime, node, params, inputs, out):
    x = inputs[0]
    pad = 4 - x.ndim
    perm = list(range(pad)) + [pad + p for p in node.attrs["perm"]]
    runtime.call("mcu_transpose", None, TransposeParams(tuple(perm)), x.itemsize, dims(x.shape), x,
                 dims(out.shape), out)


@runner("Slice")
def slice_(runtime, node, params, inputs, out):
    x = inputs[0]
    pad = 4 - x.ndim
    begin, stride = [0, 0, 0, 0], [1, 1, 1, 1]
    for start, end, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        axis %= x.ndim
        selected = range(x.shape[axis])[slice(start, end, step)]
        begin[pad + axis], stride[pad + axis] = selected.start, selected.step
    if out.size:
        runtime.call("mcu_strided_slice", None, SliceParams(tuple(begin), tuple(stride)), x.itemsize,
                     dims(x.shape), x, dims(out.shape), out)


@runner("Pad")
def pad(runtime, node, params, inputs, out):
    x = inputs[0]
    rank, extra = x.ndim, 4 - x.ndim
    before = [0] * extra + list(node.attrs["pads"][:rank])
    pad_params = PadParams(tuple(before), PAD_MODES[node.attrs["mode"]], params.pad_value)
    runtime.call(f"mcu_pad_{SUFFIX[out.dtype]}", None, pad_params, dims(x.shape), x, dims(out.shape), out)


@runner("Concat")
def concat(runtime, node, params, inputs, out):
    rank = out.ndim
    axis = 4 - rank + node.attrs["axis"] % rank
    count = len(inputs)
    in_dims = (type(dims(out.shape)) * count)(*[dims(x.shape) for x in inputs])
    kind = np.ctypeslib.as_ctypes_type(out.dtype)
    pointers = (ctypes.POINTER(kind) * count)(*[x.ctypes.data_as(ctypes.POINTER(kind)) for x in inputs])
    entries = [ConcatQuant(0, RequantizeQuant(0, 0, 0, 0)) if plan is None
               else ConcatQuant(1, RequantizeQuant(*plan[:1], plan[3], plan[1], plan[2]))
               for plan in params.requantize]
    quant = (ConcatQuant * count)(*entries)
    runtime.call(f"mcu_concat_{SUFFIX[out.dtype]}", None, ConcatParams(axis, count), quant, in_dims, pointers,
                 dims(out.shape), out)


@runner("Resize")
def resize(runtime, node, params, inputs, out):
    x = inputs[0]
    resize_params = ResizeParams(int(params.align_corners), int(params.half_pixel_centers))
    if node.attrs["mode"] == "nearest":
        runtime.call("mcu_resize_nearest", None, resize_params, x.itemsize, dims(x.shape), x,
                     dims(out.shape), out)
    else:
        runtime.call(f"mcu_resize_bilinear_{SUFFIX[out.dtype]}", None, resize_params, dims(x.shape), x,
                     dims(out.shape), out)


# -- kernels added for issue 15 (binary_more.c, reduce.c, gather.c, unary_math.c) --------------
def _padded_axis(x: np.ndarray, axis: int) -> int:
    return 4 - x.ndim + axis % x.ndim


@runner("Max", "Min")
def max_or_min(runtime, node, params, inputs, out):
    name = f"mcu_{'maximum' if node.op == 'Max' else 'minimum'}_{SUFFIX[out.dtype]}"
    runtime.call(name, None, dims(inputs[0].shape), inputs[0], dims(inputs[1].shape), inputs[1],
                 dims(out.shape), out)


@runner("SquaredDifference")
def squared_difference(runtime, node, params, inputs, out):
    p = params
    quant = AddQuant(p.left_shift, p.input1_offset, p.input2_offset, p.output_offset, p.input1_multiplier,
                     p.input1_shift, p.input2_multiplier, p.input2_shift, p.output_multiplier, p.output_shift)
    runtime.call(f"mcu_squared_difference_{SUFFIX[out.dtype]}", None, quant, dims(inputs[0].shape), inputs[0],
                 dims(inputs[1].shape), inputs[1], dims(out.shape), out)


def _reduced(x: np.ndarray, axes) -> tuple[int, tuple[int, ...]]:
    """The MCU_AXIS_* mask of ``axes`` and the 4-D kept dims (1 where reduced)."""
    padded = {_padded_axis(x, a) for a in axes}
    full = (1,) * (4 - x.ndim) + x.shape
    return sum(1 << a for a in padded), tuple(1 if a in padded else full[a] for a in range(4))


@runner("ReduceMax", "ReduceMin")
def reduce_extreme(runtime, node, params, inputs, out):
    x = inputs[0]
    mask, kept = _reduced(x, node.attrs["axes"])
    flat = np.zeros(kept, dtype=out.dtype)
    name = f"mcu_reduce_{'max' if node.op == 'ReduceMax' else 'min'}_{SUFFIX[out.dtype]}"
    runtime.call(name, None, ReduceParams(mask), dims(x.shape), x, dims(kept), flat)
    out[...] = flat.reshape(out.shape)


runner("ReduceSum")(reduce_mean)  # TFLite SUM: mcu_mean_* with the undivided multiplier


@runner("ArgMax", "ArgMin")
def arg_extreme(runtime, node, params, inputs, out):
    x = inputs[0]
    if out.dtype != np.int32:
        raise NotImplementedError("ArgMax / ArgMin with int64 output has no C kernel (TFLM gives int32)")
    axis = _padded_axis(x, node.attrs["axis"])
    kept = list((1,) * (4 - x.ndim) + x.shape)
    kept[axis] = 1
    flat = np.zeros(kept, dtype=np.int32)
    name = f"mcu_arg_{'max' if node.op == 'ArgMax' else 'min'}_{SUFFIX[x.dtype]}"
    runtime.call(name, None, ArgParams(axis, node.attrs["select_last_index"]), dims(x.shape), x,
                 dims(tuple(kept)), flat)
    out[...] = flat.reshape(out.shape)


@runner("Gather")
def gather(runtime, node, params, inputs, out):
    x, indices = inputs
    flat = np.ascontiguousarray(indices.reshape(-1), dtype=np.int32)
    runtime.call("mcu_gather", None, GatherParams(_padded_axis(x, node.attrs["axis"])), x.itemsize,
                 dims(x.shape), x, ctypes.c_int32(flat.size), flat, out)


@runner("Tile", "Expand")
def tile(runtime, node, params, inputs, out):
    """Expand is a Tile by ``out / in`` per axis (each input axis is 1 or the output's)."""
    x = inputs[0]
    in_dims, out_dims = dims(x.shape), dims(out.shape)
    repeats = [getattr(out_dims, axis) // getattr(in_dims, axis) for axis in "nhwc"]
    runtime.call("mcu_tile", None, TileParams(tuple(repeats)), x.itemsize, in_dims, x, out_dims, out)


@runner("Abs")
def abs_(runtime, node, params, inputs, out):
    p = params
    quant = AbsQuant(p.input_zero_point, p.output_zero_point, p.needs_rescale, p.multiplier, p.shift)
    runtime.call(f"mcu_abs_{SUFFIX[out.dtype]}", None, quant, dims(out.shape), inputs[0], out)


@runner("Rsqrt")
def rsqrt(runtime, node, params, inputs, out):
    p = params
    quant = RsqrtQuant(p.input_zero_point, p.output_zero_point, p.multiplier, p.shift)
    runtime.call("mcu_rsqrt_s8", None, quant, dims(out.shape), inputs[0], out)


@runner("LogSoftmax")
def log_softmax(runtime, node, params, inputs, out):
    p = params
    quant = LogSoftmaxQuant(p.input_multiplier, p.input_left_shift, p.reverse_scaling_divisor,
                            p.reverse_scaling_shift, p.diff_min)
    runtime.call("mcu_log_softmax_s8", None, quant, dims(inputs[0].shape), inputs[0], dims(out.shape), out)
