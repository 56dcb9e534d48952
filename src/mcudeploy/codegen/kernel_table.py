"""The IR -> C kernel table: which runtime function a node calls, and the by-value structs
it passes, field by field by the names of ``runtime/include/mcu_runtime.h``.

Written once and read twice: the code generator (:mod:`.kernel_ops`, :mod:`.kernel_ops_data`,
:mod:`.kernel_ops_math`) prints each :class:`Struct` as a C initialiser, and the runtime's
bit-exact ctypes tests (``runtime/tests/c_runners.py``) build the same struct with ctypes and
call the same function. Fields are named, never positional: the order comes from the header
(:mod:`.abi`, parsed from it), and a name the header does not declare is refused by both.

    kernel_function(node)            -> "mcu_conv2d_s8"
    quant_struct(node, params)       -> Struct("mcu_add_quant", (("left_shift", 20), ...))  or None
    params_struct(node, params)      -> Struct("mcu_conv_params", (("stride_h", 1), ...)) or None

Pointers (per-channel multiplier arrays, tensors, dims) are not in the table: how a pointer
is made differs (a C symbol vs a numpy array), what it points to does not.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import UnsupportedError
from ..ir import Node, Value
from .abi import Struct, struct

SUFFIX = {"int8": "s8", "int16": "s16", "int32": "s32", "float32": "f32", "uint8": "u8"}   # u8: model edges
PAD_MODES = {"constant": "MCU_PAD_CONSTANT", "reflect": "MCU_PAD_REFLECT", "edge": "MCU_PAD_EDGE"}


def suffix(value: Value) -> str:
    return SUFFIX[str(value.dtype)]


def is_depthwise(node: Node) -> bool:
    x, w = node.inputs[0], node.inputs[1]
    return w.shape[3] == 1 and node.attrs["group"] == x.shape[3] and node.attrs["group"] > 1


def padded_axis(rank: int, axis: int) -> int:
    """The NHWC axis (0..3) of ``axis`` of a rank-``rank`` tensor (leading ones added)."""
    return 4 - rank + axis % rank


def reduced_axes(shape: tuple[int, ...], axes) -> tuple[int, tuple[int, ...]]:
    """The MCU_AXIS_* mask of ``axes`` and the 4-D kept dims (1 where reduced)."""
    padded = {padded_axis(len(shape), a) for a in axes}
    full = (1,) * (4 - len(shape)) + tuple(shape)
    return sum(1 << a for a in padded), tuple(1 if a in padded else full[a] for a in range(4))


# -- function names ---------------------------------------------------------------------------
def _output(node: Node) -> str:
    return suffix(node.outputs[0])


def _input(node: Node) -> str:
    return suffix(node.inputs[0])


def _quantize_function(node: Node) -> str:
    if _input(node) == "f32":
        return f"mcu_quantize_f32_{_output(node)}"
    return f"mcu_requantize_{_input(node)}_{_output(node)}"


FUNCTIONS: dict[str, Callable[[Node], str]] = {
    "Conv": lambda n: f"mcu_{'depthwise_conv2d' if is_depthwise(n) else 'conv2d'}_{_input(n)}",
    "ConvTranspose": lambda n: f"mcu_transpose_conv2d_{_input(n)}",
    "Gemm": lambda n: f"mcu_fully_connected_{_input(n)}",
    "Add": lambda n: f"mcu_add_{_output(n)}",
    "Sub": lambda n: f"mcu_sub_{_output(n)}",
    "Mul": lambda n: f"mcu_mul_{_output(n)}",
    "AveragePool": lambda n: f"mcu_avg_pool_{_output(n)}",
    "MaxPool": lambda n: f"mcu_max_pool_{_output(n)}",
    "ReduceMean": lambda n: f"mcu_mean_{_output(n)}",
    "ReduceSum": lambda n: f"mcu_mean_{_output(n)}",      # TFLite SUM: the mean kernel, undivided multiplier
    "Softmax": lambda n: "mcu_softmax_s8" if _output(n) == "s8" else "mcu_softmax_s8_s16",
    "Sigmoid": lambda n: f"mcu_logistic_{_output(n)}",
    "Tanh": lambda n: f"mcu_tanh_{_output(n)}",
    "HardSwish": lambda n: "mcu_hard_swish_s8",
    "LeakyRelu": lambda n: f"mcu_leaky_relu_{_output(n)}",
    "QuantizeLinear": _quantize_function,
    "DequantizeLinear": lambda n: f"mcu_dequantize_{_input(n)}_f32",
    **{op: (lambda n: "mcu_reshape") for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                                  "Dropout")},
    "Transpose": lambda n: "mcu_transpose",
    "Slice": lambda n: "mcu_strided_slice",
    "Pad": lambda n: f"mcu_pad_{_output(n)}",
    "Concat": lambda n: f"mcu_concat_{_output(n)}",
    "Resize": lambda n: ("mcu_resize_nearest" if n.attrs["mode"] == "nearest"
                         else f"mcu_resize_bilinear_{_output(n)}"),
    "Max": lambda n: f"mcu_maximum_{_output(n)}",
    "Min": lambda n: f"mcu_minimum_{_output(n)}",
    "SquaredDifference": lambda n: f"mcu_squared_difference_{_output(n)}",
    "ReduceMax": lambda n: f"mcu_reduce_max_{_output(n)}",
    "ReduceMin": lambda n: f"mcu_reduce_min_{_output(n)}",
    "ArgMax": lambda n: f"mcu_arg_max_{_input(n)}",
    "ArgMin": lambda n: f"mcu_arg_min_{_input(n)}",
    "Gather": lambda n: "mcu_gather",
    "Tile": lambda n: "mcu_tile",
    "Expand": lambda n: "mcu_tile",
    "Abs": lambda n: f"mcu_abs_{_output(n)}",
    "Rsqrt": lambda n: "mcu_rsqrt_s8",
    "LogSoftmax": lambda n: "mcu_log_softmax_s8",
    "ConvAccumulate": lambda n: "mcu_conv_accumulate_s8_s32",
    "RequantizeAccumulator": lambda n: "mcu_requantize_accumulator_s32_s8",
}


def kernel_function(node: Node) -> str:
    """The runtime function ``node`` calls (the reference kernel; a variant adds its suffix)."""
    if node.op not in FUNCTIONS:
        raise UnsupportedError(f"node {node.name!r}: op {node.op} has no C runtime kernel; C code can be "
                               f"generated for {', '.join(sorted(FUNCTIONS))}")
    return FUNCTIONS[node.op](node)


# -- by-value structs -------------------------------------------------------------------------
def activation(params) -> Struct:
    return struct("mcu_activation", min=int(params.activation_min), max=int(params.activation_max))


def _fields(ctype: str, params, names: tuple[str, ...] | dict[str, str]) -> Struct:
    """The struct whose fields are the int attributes of ``params``: the same names, or
    ``{C field: params attribute}`` where the prepared parameters name them differently."""
    pairs = names.items() if isinstance(names, dict) else zip(names, names)
    return Struct(ctype, tuple((field, int(getattr(params, attribute))) for field, attribute in pairs))


ADD_FIELDS = ("left_shift", "input1_offset", "input2_offset", "output_offset", "input1_multiplier",
              "input1_shift", "input2_multiplier", "input2_shift", "output_multiplier", "output_shift")


def _smooth_step_quant(node: Node, params) -> Struct:
    if _output(node) == "s16":     # TFLM's interpolated sigmoid table
        return _fields("mcu_smooth_step_s16_quant", params, ("input_multiplier", "input_left_shift"))
    return _fields("mcu_smooth_step_quant", params, ("input_zero_point", "input_multiplier", "input_left_shift",
                                                     "input_range_radius"))


def _first(array) -> Any:
    return array.reshape(-1)[0]


def _quantize_quant(node: Node, params) -> Struct:
    if _input(node) == "f32":
        if params.scale.size != 1:
            raise UnsupportedError(f"node {node.name!r}: per-channel float quantization has no C kernel")
        return struct("mcu_affine_quant", scale=float(_first(params.scale)), zero_point=int(_first(params.zero_point)),
                      round_half_even=int(params.round_half_even))
    return _fields("mcu_requantize_quant", params, ("input_zero_point", "output_zero_point", "multiplier", "shift"))


def _dequantize_quant(node: Node, params) -> Struct:
    if params.scale.size != 1:
        raise UnsupportedError(f"node {node.name!r}: per-channel dequantization has no C kernel")
    return struct("mcu_affine_quant", scale=float(_first(params.scale)), zero_point=int(_first(params.zero_point)),
                  round_half_even=0)


def _mean_quant(node: Node, params) -> Struct:
    return _fields("mcu_mean_quant", params, {"input_zero_point": "input_zero_point",
                                              "output_zero_point": "output_zero_point",
                                              "multiplier": "output_multiplier", "shift": "output_shift"})


QUANTS: dict[str, Callable[[Node, Any], Struct]] = {
    "Add": lambda n, p: _fields("mcu_add_quant", p, ADD_FIELDS),
    "Sub": lambda n, p: _fields("mcu_add_quant", p, ADD_FIELDS),
    "SquaredDifference": lambda n, p: _fields("mcu_squared_difference_quant", p, ADD_FIELDS),  # typedef of add
    "Mul": lambda n, p: _fields("mcu_mul_quant", p, ("input1_offset", "input2_offset", "output_offset",
                                                     "output_multiplier", "output_shift")),
    "ReduceMean": _mean_quant,
    "ReduceSum": _mean_quant,
    "Softmax": lambda n, p: _fields("mcu_softmax_quant", p, ("input_multiplier", "input_left_shift", "diff_min")),
    "Sigmoid": _smooth_step_quant,
    "Tanh": _smooth_step_quant,
    "HardSwish": lambda n, p: _fields("mcu_hard_swish_quant", p, (
        "input_zero_point", "output_zero_point", "output_multiplier_fixedpoint_int16", "output_multiplier_exponent",
        "reluish_multiplier_fixedpoint_int16", "reluish_multiplier_exponent")),
    "LeakyRelu": lambda n, p: _fields("mcu_leaky_relu_quant", p, {
        "input_zero_point": "input_zero_point", "output_zero_point": "output_zero_point",
        "alpha_multiplier": "output_multiplier_alpha", "alpha_shift": "output_shift_alpha",
        "identity_multiplier": "output_multiplier_identity", "identity_shift": "output_shift_identity"}),
    "QuantizeLinear": _quantize_quant,
    "DequantizeLinear": _dequantize_quant,
    "Abs": lambda n, p: _fields("mcu_abs_quant", p, ("input_zero_point", "output_zero_point", "needs_rescale",
                                                     "multiplier", "shift")),
    "Rsqrt": lambda n, p: _fields("mcu_rsqrt_quant", p, ("input_zero_point", "output_zero_point", "multiplier",
                                                         "shift")),
    "LogSoftmax": lambda n, p: _fields("mcu_log_softmax_quant", p, (
        "input_multiplier", "input_left_shift", "reverse_scaling_divisor", "reverse_scaling_shift", "diff_min")),
    "ConvAccumulate": lambda n, p: _fields("mcu_accumulate_quant", p, ("input_offset",)),
}


def quant_struct(node: Node, params) -> Struct | None:
    """The node's by-value quantization struct, or None (channel quant and concat are arrays)."""
    return QUANTS[node.op](node, params) if node.op in QUANTS else None


def concat_quants(params) -> tuple[Struct, ...]:
    """One ``mcu_concat_quant`` per Concat input: copy, or requantize with (zp in, zp out, multiplier, shift)."""
    def requantize(zero_in: int = 0, multiplier: int = 0, shift: int = 0, zero_out: int = 0) -> Struct:
        return struct("mcu_requantize_quant", input_zero_point=int(zero_in), output_zero_point=int(zero_out),
                      multiplier=int(multiplier), shift=int(shift))
    return tuple(struct("mcu_concat_quant", requantize=0, quant=requantize()) if plan is None else
                 struct("mcu_concat_quant", requantize=1, quant=requantize(*plan))
                 for plan in params.requantize)


# -- parameter structs (geometry, axes) -------------------------------------------------------
def _geometry(attrs: dict) -> dict[str, int]:
    """strides, pads (top, left; bottom / right follow from out_dims) and dilations by field."""
    (stride_h, stride_w), pads = attrs["strides"], attrs["pads"]
    geometry = {"stride_h": stride_h, "stride_w": stride_w, "pad_top": pads[0], "pad_left": pads[1]}
    if "dilations" in attrs:
        geometry.update(dilation_h=attrs["dilations"][0], dilation_w=attrs["dilations"][1])
    return {name: int(value) for name, value in geometry.items()}


def _conv_params(node: Node, params) -> Struct:
    geometry = _geometry(node.attrs)
    if node.op == "Conv" and is_depthwise(node):
        multiplier = node.inputs[1].shape[0] // node.inputs[0].shape[3]
        return struct("mcu_depthwise_params", **geometry, depth_multiplier=int(multiplier),
                      activation=activation(params))
    return struct("mcu_conv_params", **geometry, activation=activation(params))


def _accumulate_params(node: Node, params) -> Struct:
    return struct("mcu_conv_accumulate_params", **_geometry(node.attrs),
                  channel_begin=int(node.attrs["channel_begin"]))


def _pool_params(node: Node, params) -> Struct:
    kernel_h, kernel_w = node.attrs["kernel_shape"]
    return struct("mcu_pool_params", **_geometry({"strides": node.attrs["strides"], "pads": node.attrs["pads"]}),
                  kernel_h=int(kernel_h), kernel_w=int(kernel_w), activation=activation(params))


def _mean_params(node: Node, params) -> Struct:
    return struct("mcu_mean_params", axes=reduced_axes(node.inputs[0].shape, node.attrs["axes"])[0])


def _transpose_params(node: Node, params) -> Struct:
    pad = 4 - node.inputs[0].rank
    return struct("mcu_transpose_params", perm=tuple(list(range(pad)) + [pad + p for p in node.attrs["perm"]]))


def _slice_params(node: Node, params) -> Struct:
    x = node.inputs[0]
    pad = 4 - x.rank
    begin, stride = [0, 0, 0, 0], [1, 1, 1, 1]
    for start, end, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        axis %= x.rank
        selected = range(x.shape[axis])[slice(start, end, step)]
        begin[pad + axis], stride[pad + axis] = selected.start, selected.step
    return struct("mcu_strided_slice_params", begin=tuple(begin), stride=tuple(stride))


def _pad_params(node: Node, params) -> Struct:
    rank = node.inputs[0].rank
    before = tuple([0] * (4 - rank) + [int(p) for p in node.attrs["pads"][:rank]])
    return struct("mcu_pad_params", before=before, mode=PAD_MODES[node.attrs["mode"]],
                  pad_value=int(params.pad_value))


def _concat_params(node: Node, params) -> Struct:
    rank = node.outputs[0].rank
    return struct("mcu_concat_params", axis=padded_axis(rank, node.attrs["axis"]), count=len(node.inputs))


def _tile_params(node: Node, params) -> Struct:
    full = lambda shape: (1,) * (4 - len(shape)) + tuple(shape)   # noqa: E731
    repeats = tuple(o // i for o, i in zip(full(node.outputs[0].shape), full(node.inputs[0].shape)))
    return struct("mcu_tile_params", repeats=repeats)


def _reduce_params(node: Node, params) -> Struct:
    return struct("mcu_reduce_params", axes=reduced_axes(node.inputs[0].shape, node.attrs["axes"])[0])


def _arg_params(node: Node, params) -> Struct:
    return struct("mcu_arg_params", axis=padded_axis(node.inputs[0].rank, node.attrs["axis"]),
                  select_last_index=int(node.attrs["select_last_index"]))


def _activation_params(ctype: str) -> Callable[[Node, Any], Struct]:
    return lambda node, params: struct(ctype, activation=activation(params))


PARAMS: dict[str, Callable[[Node, Any], Struct]] = {
    "Conv": _conv_params,
    "ConvTranspose": _conv_params,
    "Gemm": _activation_params("mcu_fc_params"),
    **{op: _activation_params("mcu_elementwise_params") for op in ("Add", "Sub", "Mul")},
    "AveragePool": _pool_params,
    "MaxPool": _pool_params,
    "ReduceMean": _mean_params,
    "ReduceSum": _mean_params,
    "Transpose": _transpose_params,
    "Slice": _slice_params,
    "Pad": _pad_params,
    "Concat": _concat_params,
    "Resize": lambda n, p: struct("mcu_resize_params", align_corners=int(p.align_corners),
                                  half_pixel_centers=int(p.half_pixel_centers)),
    "ReduceMax": _reduce_params,
    "ReduceMin": _reduce_params,
    "ArgMax": _arg_params,
    "ArgMin": _arg_params,
    "Gather": lambda n, p: struct("mcu_gather_params", axis=padded_axis(n.inputs[0].rank, n.attrs["axis"])),
    "Tile": _tile_params,
    "Expand": _tile_params,
    "ConvAccumulate": _accumulate_params,
    "RequantizeAccumulator": _activation_params("mcu_accumulator_params"),
}


def params_struct(node: Node, params) -> Struct | None:
    """The node's by-value parameter struct (geometry, axes, activation), or None."""
    return PARAMS[node.op](node, params) if node.op in PARAMS else None
