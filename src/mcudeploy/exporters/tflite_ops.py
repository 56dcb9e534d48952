"""The op writers of :mod:`.tflite_writer`: one function per IR op family, each the inverse of
the TFLite importer's converter for it (:mod:`mcudeploy.importers.tflite.ops`), so that a
written file imports back into the same IR graph."""
from __future__ import annotations

from tflite.Padding import Padding

from ..errors import UnsupportedError
from ..ir import Node
from .tflite_writer import RESIZE_FLAGS, TfliteBuilder, _where, activation, padding, writer


def _spatial(builder: TfliteBuilder, node: Node, x_index: int, kernel_hw, strides, dilations) -> tuple[int, int]:
    """``(input tensor, padding)``: SAME / VALID, or a PAD of the input's zero point then VALID."""
    x = node.inputs[0]
    code = padding(node, x.shape[1:3], kernel_hw, strides, dilations)
    if code is not None:
        return x_index, code
    if node.op != "Conv":
        raise UnsupportedError(f"{_where(node)}: pads {list(node.attrs['pads'])} are neither SAME nor VALID "
                               "in TFLite's sense; pad explicitly before the node")
    top, left, bottom, right = node.attrs["pads"]
    shape = (x.shape[0], x.shape[1] + top + bottom, x.shape[2] + left + right, x.shape[3])
    padded = builder.scratch(f"{node.name}/padded", x, shape)
    paddings = builder.constant(f"{node.name}/paddings", [[0, 0], [top, bottom], [left, right], [0, 0]])
    builder.operator("PAD", [x_index, paddings], [padded], "PadOptions", {})
    return padded, Padding.VALID


def _layout(node: Node) -> None:
    if node.attrs.get("layout", "NHWC") != "NHWC":
        raise UnsupportedError(f"{_where(node)}: layout {node.attrs['layout']}; TFLite ops are NHWC "
                               "(quantize the model with mcudeploy, which converts it to NHWC)")


@writer("Conv")
def conv(builder: TfliteBuilder, node: Node) -> None:
    _layout(node)
    x, weights, bias = node.inputs[0], node.inputs[1], node.input(2)
    if weights.const is None:
        raise UnsupportedError(f"{_where(node)}: weights computed at run time; TFLite needs constant weights")
    group, (sh, sw), (dh, dw) = node.attrs["group"], node.attrs["strides"], node.attrs["dilations"]
    source, code = _spatial(builder, node, builder.tensor(x), weights.shape[1:3], (sh, sw), (dh, dw))
    depthwise = group == x.shape[3] and weights.shape[3] == 1 and group > 1
    if group != 1 and not depthwise:
        raise UnsupportedError(f"{_where(node)}: grouped convolution (group {group}) has no TFLite builtin; "
                               "split it into convolutions per group")
    if depthwise:
        quant_axis = 3 if weights.quant is not None and weights.quant.axis is not None else None
        weight_index = builder.tensor(weights, array=weights.const.transpose(3, 1, 2, 0), axis=quant_axis)
    else:
        weight_index = builder.tensor(weights)
    inputs = [source, weight_index, -1 if bias is None else builder.tensor(bias)]
    options = {"padding": code, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh,
               "dilation_w_factor": dw, "fused_activation_function": activation(node)}
    if depthwise:
        options["depth_multiplier"] = weights.shape[0] // x.shape[3]
    builder.operator("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", inputs, [builder.tensor(node.outputs[0])],
                     "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", options)


@writer("Gemm")
def gemm(builder: TfliteBuilder, node: Node) -> None:
    attrs = node.attrs
    if attrs["transA"] or not attrs["transB"] or attrs["alpha"] != 1.0 or attrs["beta"] != 1.0 \
            or node.inputs[1].const is None or node.inputs[0].rank != 2:
        raise UnsupportedError(f"{_where(node)}: only Y = X W^T + B with constant W [N, K] and a 2-D X "
                               "(TFLite FULLY_CONNECTED) is written")
    inputs, outputs = builder.io(node)
    builder.operator("FULLY_CONNECTED", inputs + [-1] * (3 - len(inputs)), outputs, "FullyConnectedOptions",
                     {"fused_activation_function": activation(node)})


@writer("Add", "Sub", "Mul")
def binary(builder: TfliteBuilder, node: Node) -> None:
    inputs, outputs = builder.io(node)
    table = {"Add": "AddOptions", "Sub": "SubOptions", "Mul": "MulOptions"}[node.op]
    builder.operator(node.op.upper(), inputs, outputs, table, {"fused_activation_function": activation(node)})


@writer("MaxPool", "AveragePool")
def pool(builder: TfliteBuilder, node: Node) -> None:
    _layout(node)
    attrs = node.attrs
    if attrs["ceil_mode"] or tuple(attrs["dilations"]) != (1, 1):
        raise UnsupportedError(f"{_where(node)}: ceil_mode / dilated pooling has no TFLite form")
    (kh, kw), (sh, sw) = attrs["kernel_shape"], attrs["strides"]
    source, code = _spatial(builder, node, builder.tensor(node.inputs[0]), (kh, kw), (sh, sw), (1, 1))
    builder.operator("MAX_POOL_2D" if node.op == "MaxPool" else "AVERAGE_POOL_2D", [source],
                     [builder.tensor(node.outputs[0])], "Pool2DOptions",
                     {"padding": code, "stride_h": sh, "stride_w": sw, "filter_height": kh, "filter_width": kw,
                      "fused_activation_function": activation(node)})


@writer("ReduceMean")
def mean(builder: TfliteBuilder, node: Node) -> None:
    axes = builder.constant(f"{node.name}/axes", list(node.attrs["axes"]))
    builder.operator("MEAN", [builder.tensor(node.inputs[0]), axes], [builder.tensor(node.outputs[0])],
                     "ReducerOptions", {"keep_dims": bool(node.attrs["keepdims"])})


@writer("Softmax")
def softmax(builder: TfliteBuilder, node: Node) -> None:
    if node.attrs["axis"] % node.inputs[0].rank != node.inputs[0].rank - 1:
        raise UnsupportedError(f"{_where(node)}: softmax over axis {node.attrs['axis']}; TFLite's is over "
                               "the last axis")
    inputs, outputs = builder.io(node)
    builder.operator("SOFTMAX", inputs, outputs, "SoftmaxOptions", {"beta": float(node.attrs["beta"])})


UNARY = {"Sigmoid": "LOGISTIC", "Tanh": "TANH", "HardSwish": "HARD_SWISH"}


@writer(*UNARY)
def unary(builder: TfliteBuilder, node: Node) -> None:
    inputs, outputs = builder.io(node)
    builder.operator(UNARY[node.op], inputs, outputs)


@writer("LeakyRelu")
def leaky_relu(builder: TfliteBuilder, node: Node) -> None:
    inputs, outputs = builder.io(node)
    builder.operator("LEAKY_RELU", inputs, outputs, "LeakyReluOptions", {"alpha": float(node.attrs["alpha"])})


@writer("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")
def reshape(builder: TfliteBuilder, node: Node) -> None:
    shape = list(node.outputs[0].shape)
    target = builder.constant(f"{node.name}/shape", shape)
    builder.operator("RESHAPE", [builder.tensor(node.inputs[0]), target], [builder.tensor(node.outputs[0])],
                     "ReshapeOptions", {"new_shape": shape})


@writer("Transpose")
def transpose(builder: TfliteBuilder, node: Node) -> None:
    perm = builder.constant(f"{node.name}/perm", list(node.attrs["perm"]))
    builder.operator("TRANSPOSE", [builder.tensor(node.inputs[0]), perm], [builder.tensor(node.outputs[0])],
                     "TransposeOptions", {})


@writer("Concat")
def concat(builder: TfliteBuilder, node: Node) -> None:
    inputs, outputs = builder.io(node)
    builder.operator("CONCATENATION", inputs, outputs, "ConcatenationOptions",
                     {"axis": node.attrs["axis"] % node.outputs[0].rank, "fused_activation_function": 0})


@writer("Pad")
def pad(builder: TfliteBuilder, node: Node) -> None:
    x, attrs = node.inputs[0], node.attrs
    if attrs["mode"] != "constant" or attrs["value"] != 0.0 or any(p < 0 for p in attrs["pads"]):
        raise UnsupportedError(f"{_where(node)}: only zero padding (mode constant, value 0, no cropping) "
                               "is written (TFLite PAD pads with the zero point)")
    pads = attrs["pads"]
    table = [[pads[axis], pads[axis + x.rank]] for axis in range(x.rank)]
    builder.operator("PAD", [builder.tensor(x), builder.constant(f"{node.name}/paddings", table)],
                     [builder.tensor(node.outputs[0])], "PadOptions", {})


@writer("Slice")
def strided_slice(builder: TfliteBuilder, node: Node) -> None:
    x = node.inputs[0]
    begin, end, strides = [0] * x.rank, list(x.shape), [1] * x.rank
    for start, stop, axis, step in zip(*(node.attrs[k] for k in ("starts", "ends", "axes", "steps"))):
        axis %= x.rank
        indices = range(x.shape[axis])[slice(start, stop, step)]
        if indices.stop < 0:
            raise UnsupportedError(f"{_where(node)}: a backward slice through the first element is not written")
        begin[axis], end[axis], strides[axis] = indices.start, indices.stop, step
    arrays = [builder.constant(f"{node.name}/{what}", values)
              for what, values in (("begin", begin), ("end", end), ("strides", strides))]
    builder.operator("STRIDED_SLICE", [builder.tensor(x), *arrays], [builder.tensor(node.outputs[0])],
                     "StridedSliceOptions", {})


@writer("Resize")
def resize(builder: TfliteBuilder, node: Node) -> None:
    x, out, attrs = node.inputs[0], node.outputs[0], node.attrs
    nearest = attrs["mode"] == "nearest"
    mode = attrs["coordinate_transformation_mode"]
    valid = {"asymmetric", "align_corners", "tf_half_pixel_for_nn"} if nearest else {"asymmetric", "align_corners",
                                                                                       "half_pixel"}
    if x.rank != 4 or x.shape[0] != out.shape[0] or x.shape[3] != out.shape[3] or mode not in valid:
        raise UnsupportedError(f"{_where(node)}: TFLite resizes NHWC height / width with coordinate mode "
                               f"{', '.join(sorted(valid))}; got {mode} from {x.type_str()} to {out.type_str()}")
    align_corners, half_pixel = RESIZE_FLAGS[mode]
    size = builder.constant(f"{node.name}/size", list(out.shape[1:3]))
    builder.operator("RESIZE_NEAREST_NEIGHBOR" if nearest else "RESIZE_BILINEAR", [builder.tensor(x), size],
                     [builder.tensor(out)], "ResizeNearestNeighborOptions" if nearest else "ResizeBilinearOptions",
                     {"align_corners": align_corners, "half_pixel_centers": half_pixel})


@writer("DepthToSpace")
def depth_to_space(builder: TfliteBuilder, node: Node) -> None:
    _layout(node)
    if node.attrs["mode"] != "DCR":
        raise UnsupportedError(f"{_where(node)}: mode {node.attrs['mode']}; TFLite DEPTH_TO_SPACE is DCR")
    inputs, outputs = builder.io(node)
    builder.operator("DEPTH_TO_SPACE", inputs, outputs, "DepthToSpaceOptions",
                     {"block_size": node.attrs["blocksize"]})


@writer("QuantizeLinear")
def quantize(builder: TfliteBuilder, node: Node) -> None:
    if node.inputs[0].dtype.is_float and node.attrs["rounding"] != "half_away_from_zero":
        raise UnsupportedError(f"{_where(node)}: rounds halves to even (ONNX QuantizeLinear); TFLite's QUANTIZE "
                               "rounds them away from zero: quantize with tflite_rounding (what "
                               "'mcudeploy quantize -o MODEL.tflite' does)")
    if node.outputs[0].quant is None or node.outputs[0].quant.per_channel:
        raise UnsupportedError(f"{_where(node)}: TFLite QUANTIZE writes per-tensor parameters")
    inputs, outputs = builder.io(node)
    builder.operator("QUANTIZE", inputs, outputs, "QuantizeOptions", {})


@writer("DequantizeLinear")
def dequantize(builder: TfliteBuilder, node: Node) -> None:
    inputs, outputs = builder.io(node)
    builder.operator("DEQUANTIZE", inputs, outputs, "DequantizeOptions", {})

