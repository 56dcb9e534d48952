"""One writer per IR op: emit the op's float semantics as ONNX nodes (opset 21).

A writer gets the :class:`~.onnx_qdq.OnnxWriter`, the IR node and the names of its float
inputs, and returns the names of its float outputs. IR ops with a ``layout`` attribute of
``NHWC`` are written as NCHW ONNX ops between two Transposes (``NHWC -> NCHW`` on the
activation, ``NCHW -> NHWC`` on the result); their weights are permuted as constants.
A fused activation (``activation_min`` / ``activation_max``) becomes a Relu or a Clip.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import UnsupportedError
from ..ir import Node

if TYPE_CHECKING:
    from .onnx_qdq import OnnxWriter

TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
Writer = Callable[["OnnxWriter", Node, list], list]
WRITERS: dict[str, Writer] = {}


def writes(*ops: str) -> Callable[[Writer], Writer]:
    def decorate(function: Writer) -> Writer:
        for op in ops:
            WRITERS[op] = function
        return function
    return decorate


def clamp(writer, node: Node, name: str) -> str:
    """The fused clamp of ``node`` applied to tensor ``name`` (nothing when unbounded)."""
    low, high = node.attrs.get("activation_min"), node.attrs.get("activation_max")
    if low is None and high is None:
        return name
    if low == 0.0 and high is None:
        return writer.emit("Relu", [name], f"{node.name}/relu")
    bounds = ["" if b is None else writer.initializer(f"{node.name}/clip_{k}", np.float32(b))
              for k, b in (("min", low), ("max", high))]
    return writer.emit("Clip", [name] + bounds, f"{node.name}/clip")


def _nhwc(node: Node) -> bool:
    return node.attrs.get("layout") == "NHWC"


def _in(writer, node: Node, name: str) -> str:
    return writer.emit("Transpose", [name], f"{node.name}/to_nchw", perm=TO_NCHW) if _nhwc(node) else name


def _out(writer, node: Node, name: str) -> str:
    return writer.emit("Transpose", [name], f"{node.name}/to_nhwc", perm=TO_NHWC) if _nhwc(node) else name


def _conv_weights(writer, node: Node) -> str:
    weights = node.inputs[1]
    if not _nhwc(node):
        return writer.float_of(weights)
    if node.op == "Conv":   # [O, kH, kW, C/g] -> [O, C/g, kH, kW]
        return writer.float_of(weights, permutation=(0, 3, 1, 2))
    if node.attrs["group"] != 1:
        raise UnsupportedError(f"node {node.name!r}: grouped NHWC ConvTranspose cannot be exported")
    return writer.float_of(weights, permutation=(3, 0, 1, 2))  # -> [C, O, kH, kW]


@writes("Conv", "ConvTranspose")
def conv(writer, node: Node, inputs: list) -> list:
    attrs = {k: list(node.attrs[k]) for k in ("strides", "dilations", "pads")}
    attrs["group"] = node.attrs["group"]
    if node.op == "ConvTranspose":
        attrs["output_padding"] = list(node.attrs["output_padding"])
    operands = [_in(writer, node, inputs[0]), _conv_weights(writer, node)]
    if node.input(2) is not None:
        operands.append(inputs[2])
    result = writer.emit(node.op, operands, node.name, **attrs)
    return [_out(writer, node, clamp(writer, node, result))]


@writes("MaxPool", "AveragePool")
def pool(writer, node: Node, inputs: list) -> list:
    attrs = {k: list(node.attrs[k]) for k in ("kernel_shape", "strides", "pads")}
    attrs["ceil_mode"] = node.attrs["ceil_mode"]
    if node.attrs["dilations"] != (1, 1):  # onnxruntime's fused QLinearAveragePool refuses the attribute
        attrs["dilations"] = list(node.attrs["dilations"])
    if node.op == "AveragePool":
        attrs["count_include_pad"] = node.attrs["count_include_pad"]
    result = writer.emit(node.op, [_in(writer, node, inputs[0])], node.name, **attrs)
    return [_out(writer, node, clamp(writer, node, result))]


@writes("GlobalAveragePool")
def global_pool(writer, node: Node, inputs: list) -> list:
    return [_out(writer, node, writer.emit(node.op, [_in(writer, node, inputs[0])], node.name))]


@writes("BatchNormalization")
def batch_norm(writer, node: Node, inputs: list) -> list:
    x = _in(writer, node, inputs[0]) if node.inputs[0].rank == 4 else inputs[0]
    result = writer.emit(node.op, [x] + inputs[1:], node.name, epsilon=node.attrs["epsilon"])
    return [_out(writer, node, result) if node.inputs[0].rank == 4 else result]


@writes("DepthToSpace")
def depth_to_space(writer, node: Node, inputs: list) -> list:
    result = writer.emit(node.op, [_in(writer, node, inputs[0])], node.name,
                         blocksize=node.attrs["blocksize"], mode=node.attrs["mode"])
    return [_out(writer, node, result)]


@writes("Gemm")
def gemm(writer, node: Node, inputs: list) -> list:
    attrs = {k: node.attrs[k] for k in ("transA", "transB", "alpha", "beta")}
    result = writer.emit("Gemm", [x for x in inputs if x is not None], node.name, **attrs)
    return [clamp(writer, node, result)]


@writes("Add", "Sub", "Mul", "Div")
def binary(writer, node: Node, inputs: list) -> list:
    return [clamp(writer, node, writer.emit(node.op, inputs, node.name))]


@writes("MatMul", "PRelu", "Relu", "Sigmoid", "Tanh", "HardSwish", "Identity")
def plain(writer, node: Node, inputs: list) -> list:
    return [writer.emit(node.op, inputs, node.name)]


@writes("Dropout")
def dropout(writer, node: Node, inputs: list) -> list:
    return [writer.emit("Identity", inputs, node.name)]


@writes("HardSigmoid", "LeakyRelu")
def with_alpha(writer, node: Node, inputs: list) -> list:
    return [writer.emit(node.op, inputs, node.name, **node.attrs)]


@writes("Clip")
def clip(writer, node: Node, inputs: list) -> list:
    bounds = ["" if node.attrs[k] is None else writer.initializer(f"{node.name}/{k}",
                                                                  np.float32(node.attrs[k]))
              for k in ("min", "max")]
    return [writer.emit("Clip", inputs + bounds, node.name)]


@writes("Softmax")
def softmax(writer, node: Node, inputs: list) -> list:
    x = inputs[0]
    if node.attrs["beta"] != 1.0:
        beta = writer.initializer(f"{node.name}/beta", np.float32(node.attrs["beta"]))
        x = writer.emit("Mul", [x, beta], f"{node.name}/beta_mul")
    return [writer.emit("Softmax", [x], node.name, axis=node.attrs["axis"])]


def _ints(writer, node: Node, key: str, values) -> str:
    return writer.initializer(f"{node.name}/{key}", np.asarray(values, dtype=np.int64))


@writes("ReduceMean")
def reduce_mean(writer, node: Node, inputs: list) -> list:
    return [writer.emit("ReduceMean", [inputs[0], _ints(writer, node, "axes", node.attrs["axes"])],
                        node.name, keepdims=node.attrs["keepdims"])]


@writes("Reshape", "Flatten")
def reshape(writer, node: Node, inputs: list) -> list:
    shape = _ints(writer, node, "shape", node.outputs[0].shape)
    return [writer.emit("Reshape", [inputs[0], shape], node.name)]


@writes("Squeeze", "Unsqueeze")
def squeeze(writer, node: Node, inputs: list) -> list:
    return [writer.emit(node.op, [inputs[0], _ints(writer, node, "axes", node.attrs["axes"])], node.name)]


@writes("Transpose")
def transpose(writer, node: Node, inputs: list) -> list:
    return [writer.emit("Transpose", inputs, node.name, perm=list(node.attrs["perm"]))]


@writes("Concat")
def concat(writer, node: Node, inputs: list) -> list:
    return [writer.emit("Concat", inputs, node.name, axis=node.attrs["axis"])]


@writes("Split")
def split(writer, node: Node, inputs: list) -> list:
    sizes = _ints(writer, node, "split", node.attrs["split"])
    return writer.emit_multi("Split", [inputs[0], sizes], node.name, len(node.outputs),
                             axis=node.attrs["axis"])


@writes("Slice")
def slice_(writer, node: Node, inputs: list) -> list:
    parts = [_ints(writer, node, k, node.attrs[k]) for k in ("starts", "ends", "axes", "steps")]
    return [writer.emit("Slice", [inputs[0]] + parts, node.name)]


@writes("Pad")
def pad(writer, node: Node, inputs: list) -> list:
    value = writer.initializer(f"{node.name}/value", np.float32(node.attrs["value"]))
    return [writer.emit("Pad", [inputs[0], _ints(writer, node, "pads", node.attrs["pads"]), value],
                        node.name, mode=node.attrs["mode"])]


@writes("Resize")
def resize(writer, node: Node, inputs: list) -> list:
    sizes = _ints(writer, node, "sizes", node.attrs["sizes"])
    attrs = {k: node.attrs[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode")}
    return [writer.emit("Resize", [inputs[0], "", "", sizes], node.name, **attrs)]
