"""The integer reference executor on hand-built quantized graphs: hand-worked numbers,
naive loop references (convolutions), the float executor as a semantic reference (within
one or two output steps), the batch rule and the error paths."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.arithmetic import fixed_point as fp
from mcudeploy.errors import DataError, UnsupportedError
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.reference import run_float
from mcudeploy.reference.int_executor import prepare_graph, run_int
from mcudeploy.reference.int_kernels import prepare_node
from mcudeploy.reference.int_kernels._common import requantize, requantize_and_clamp

RNG = np.random.default_rng(0)


def q(scale, zero_point=0, axis=None) -> QuantParams:
    return QuantParams(np.asarray(scale, np.float32), np.asarray(zero_point), axis)


def single_op(op, inputs, attrs, out_quant, constants=(), out_dtype=None) -> Graph:
    """A graph with one node: ``inputs`` are (name, dtype, shape, quant) graph inputs,
    ``constants`` (name, array, quant) follow them as node inputs (None = omitted)."""
    graph = Graph(op)
    values = [graph.add_input(n, DType(d), s, quant=qp, layout="NHWC" if len(s) == 4 else None)
              for n, d, s, qp in inputs]
    values += [None if c is None else graph.add_constant(c[0], c[1], quant=c[2]) for c in constants]
    node = graph.add_node(op, values, attrs, name="node")
    node.outputs[0].quant = out_quant
    graph.outputs = [node.outputs[0]]
    verify(graph)
    return graph


def run_one(graph, *arrays, **kwargs):
    feeds = {v.name: a for v, a in zip(graph.inputs, arrays)}
    return run_int(graph, feeds, **kwargs)[graph.outputs[0].name]


def random_int(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def float_twin(graph: Graph, feeds_int: list[np.ndarray]) -> np.ndarray:
    """The float executor on a float copy of ``graph`` fed the dequantized inputs, its output
    quantized to the integer output's parameters (the semantic reference)."""
    twin = graph.copy()
    for value in twin.values():
        if value.const is not None and value.quant is not None and value.dtype.is_integer:
            value.const = value.quant.dequantize(value.const)
            value.dtype = DType.FLOAT32
        elif value.const is None:
            value.dtype = DType.FLOAT32
    feeds = {v.name: v.quant.dequantize(a) for v, a in zip(graph.inputs, feeds_int)}
    result = run_float(twin, feeds)[twin.outputs[0].name]
    out_quant = graph.outputs[0].quant
    info = np.iinfo(graph.outputs[0].dtype.numpy)
    return np.clip(np.round(result / out_quant.scale[0]) + out_quant.zero_point[0], info.min, info.max)


# -- convolutions: hand-worked, naive loops -----------------------------------------------
def test_conv_prepare_hand_worked():
    graph = single_op("Conv", [("x", "int8", (1, 3, 3, 2), q(0.5, 1))],
                      {"layout": "NHWC", "activation_min": 0.0, "activation_max": 6.0}, q(0.125, -3),
                      [("w", np.ones((2, 1, 1, 2), np.int8), q([0.25, 0.5], 0, 0))])
    params = prepare_node(graph.nodes[0])
    assert params.output_multiplier.tolist() == [1 << 30, 1 << 30]   # reals 1.0, 2.0
    assert params.output_shift.tolist() == [1, 2]
    assert (params.input_offset, params.output_offset) == (-1, -3)
    assert (params.activation_min, params.activation_max) == (-3, 45)  # 0 -> zp, 6 / 0.125 = 48


def test_conv_eval_hand_worked():
    # acc = 5 + 3 * (10 - 2) + 1 * (-4 - 2) = 23; real multiplier 0.5: srdhm(23, 2^30) = 12; + zp -3
    graph = single_op("Conv", [("x", "int8", (1, 1, 1, 2), q(0.5, 2))], {"layout": "NHWC"},
                      q(0.25, -3), [("w", np.array([[[[3, 1]]]], np.int8), q([0.25], 0, 0)),
                                    ("b", np.array([5], np.int32), None)])
    assert run_one(graph, np.array([[[[10, -4]]]], np.int8)).ravel().tolist() == [9]


def naive_conv(x, w, bias, params, attrs, out_shape, dtype):
    """Literal loops of TFLM ConvPerChannel (NHWC, weights [O, kH, kW, C/g])."""
    n, height, width, channels = x.shape
    out_channels, kh, kw, per_group = w.shape
    group = attrs["group"]
    (sh, sw), (dh, dw), (top, left) = attrs["strides"], attrs["dilations"], attrs["pads"][:2]
    acc = np.zeros(out_shape, np.int64)
    for b, oy, ox, o in np.ndindex(*out_shape):
        g = o // (out_channels // group)
        total = 0 if bias is None else int(bias[o])
        for i, j, c in np.ndindex(kh, kw, per_group):
            y, xx = oy * sh + i * dh - top, ox * sw + j * dw - left
            if 0 <= y < height and 0 <= xx < width:
                total += int(w[o, i, j, c]) * (int(x[b, y, xx, g * per_group + c]) + params.input_offset)
        acc[b, oy, ox, o] = total
    return requantize_and_clamp(acc, params.output_multiplier, params.output_shift,
                                params.output_offset, params.activation_min, params.activation_max,
                                dtype, int64_accumulator=params.int64_accumulator)


CONV_CASES = {
    "regular_same_stride2": ((1, 7, 6, 3), (4, 3, 3, 3), {"strides": (2, 2), "pads": (1, 1, 1, 1)}),
    "depthwise": ((2, 5, 5, 4), (4, 3, 3, 1), {"group": 4, "pads": (1, 1, 1, 1)}),
    "depthwise_multiplier2": ((1, 5, 4, 3), (6, 2, 3, 1), {"group": 3, "pads": (0, 1, 1, 1)}),
    "grouped": ((1, 4, 4, 4), (6, 3, 3, 2), {"group": 2}),
    "dilated_relu": ((1, 7, 7, 2), (3, 3, 3, 2), {"dilations": (2, 2), "activation_min": 0.0}),
}


@pytest.mark.parametrize("dtype, bias_dtype", [("int8", np.int32), ("int16", np.int64),
                                               ("int16", np.int32)])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_matches_naive_loops(case, dtype, bias_dtype):
    x_shape, w_shape, extra = CONV_CASES[case]
    zero_point = 7 if dtype == "int8" else 0
    weights = random_int(np.int8, w_shape)
    scales = RNG.uniform(0.002, 0.02, w_shape[0]).astype(np.float32)
    bias = RNG.integers(-5000, 5000, w_shape[0]).astype(bias_dtype)
    graph = single_op("Conv", [("x", dtype, x_shape, q(0.05, zero_point))], {"layout": "NHWC", **extra},
                      q(0.07, -zero_point // 2), [("w", weights, q(scales, 0, 0)), ("b", bias, None)])
    x = random_int(np.dtype(dtype), x_shape)
    params = prepare_node(graph.nodes[0])
    assert params.int64_accumulator == (dtype == "int16" and bias_dtype is np.int64)
    out = graph.outputs[0]
    expected = naive_conv(x, weights, bias, params, graph.nodes[0].attrs, out.shape, out.dtype.numpy)
    assert np.array_equal(run_one(graph, x), expected)


def naive_transpose_conv(x, w, bias, params, attrs, out_shape, dtype):
    n, height, width, _ = x.shape
    (sh, sw), (top, left) = attrs["strides"], attrs["pads"][:2]
    acc = np.zeros(out_shape, np.int64)
    for b, y, xx, i, j in np.ndindex(n, height, width, w.shape[1], w.shape[2]):
        oy, ox = y * sh + i - top, xx * sw + j - left
        if 0 <= oy < out_shape[1] and 0 <= ox < out_shape[2]:
            acc[b, oy, ox] += w[:, i, j, :].astype(np.int64) @ (x[b, y, xx].astype(np.int64)
                                                                  + params.input_offset)
    return requantize_and_clamp(acc + bias, params.output_multiplier, params.output_shift,
                                params.output_offset, params.activation_min, params.activation_max,
                                dtype, int64_accumulator=params.int64_accumulator)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_conv_transpose_matches_naive_scatter(dtype):
    zero_point = -5 if dtype == "int8" else 0
    weights = random_int(np.int8, (3, 3, 4, 2))
    bias = RNG.integers(-3000, 3000, 3).astype(np.int32 if dtype == "int8" else np.int64)
    graph = single_op("ConvTranspose", [("x", dtype, (2, 3, 4, 2), q(0.05, zero_point))],
                      {"layout": "NHWC", "strides": (2, 2), "pads": (1, 1, 0, 1)}, q(0.2, zero_point),
                      [("w", weights, q(np.full(3, 0.01), 0, 0)), ("b", bias, None)])
    x = random_int(np.dtype(dtype), (2, 3, 4, 2))
    params = prepare_node(graph.nodes[0])
    out = graph.outputs[0]
    expected = naive_transpose_conv(x, weights, bias, params, graph.nodes[0].attrs, out.shape,
                                    out.dtype.numpy)
    assert np.array_equal(run_one(graph, x), expected)


# -- fully connected, elementwise, pooling: hand-worked ----------------------------------
def test_gemm_hand_worked_and_per_channel():
    weights = np.array([[1, 2], [-3, 4]], np.int8)
    graph = single_op("Gemm", [("x", "int8", (1, 2), q(1.0, 1))], {"transB": 1}, q(2.0, 0),
                      [("w", weights, q([0.5, 1.0], 0, 0)), ("b", np.array([1, -1], np.int32), None)])
    # acc = [1 + 1*4 + 2*2, -1 - 3*4 + 4*2] = [9, -5]; reals [0.25, 0.5]. Channel 0 shows
    # double rounding: srdhm(9, 2^30) = 4.5 -> 5, rdbpot(5, 1) = 2.5 -> 3 (not round(2.25) = 2);
    # channel 1: srdhm(-5, 2^30) = -2.5 -> -2 (gemmlowp rounds halves up).
    assert run_one(graph, np.array([[5, 3]], np.int8)).tolist() == [[3, -2]]


@pytest.mark.parametrize("op, expected", [("Add", [7, 127, -128, 0]), ("Sub", [-1, 127, -128, 0])])
def test_add_sub_hand_worked(op, expected):
    graph = single_op(op, [("a", "int8", (4,), q(1.0)), ("b", "int8", (4,), q(1.0))], {}, q(1.0))
    a, b = np.array([3, 100, -100, 0], np.int8), np.array([4, 100, -100, 0], np.int8)
    if op == "Sub":
        b = np.array([4, -100, 100, 0], np.int8)
    assert run_one(graph, a, b).tolist() == expected


def test_average_max_pool_and_mean_hand_worked():
    x = np.array([1, 2, -1, -2, 7, 0], np.int8).reshape(1, 1, 6, 1)
    attrs = {"layout": "NHWC", "kernel_shape": (1, 2), "strides": (1, 2)}
    average = single_op("AveragePool", [("x", "int8", (1, 1, 6, 1), q(0.1))], attrs, q(0.1))
    assert run_one(average, x).ravel().tolist() == [2, -2, 4]        # 1.5 -> 2, -1.5 -> -2, 3.5 -> 4
    padded = single_op("AveragePool", [("x", "int8", (1, 1, 6, 1), q(0.1))],
                       {**attrs, "kernel_shape": (1, 3), "pads": (0, 1, 0, 1)}, q(0.1))
    # windows [pad, 1, 2] (count 2: 1.5 -> 2), [2, -1, -2] (-1/3 -> 0), [-2, 7, 0] (5/3 -> 2)
    assert run_one(padded, x).ravel().tolist() == [2, 0, 2]
    maximum = single_op("MaxPool", [("x", "int8", (1, 1, 6, 1), q(0.1))], attrs, q(0.1))
    assert run_one(maximum, x).ravel().tolist() == [2, -1, 7]
    mean = single_op("ReduceMean", [("x", "int8", (1, 4), q(0.5))], {"axes": (1,), "keepdims": 0},
                     q(0.5))
    assert run_one(mean, np.array([[1, 2, 3, 4]], np.int8)).tolist() == [3]  # 2.5 -> 3


def test_softmax_hand_worked_and_close_to_float():
    graph = single_op("Softmax", [("x", "int8", (2, 4), q(0.1, 3))], {}, q(1 / 256, -128))
    equal = run_one(graph, np.array([[5, 5, 5, 5], [-50, 20, 100, -128]], np.int8))
    assert equal[0].tolist() == [-64] * 4                           # 0.25 * 256 - 128
    x = random_int(np.int8, (2, 4))
    assert np.abs(run_one(graph, x).astype(int) - float_twin(graph, [x])).max() <= 1


@pytest.mark.parametrize("op, attrs, out_quant", [
    ("Sigmoid", {}, q(1 / 256, -128)), ("Tanh", {}, q(1 / 128, 0)),
    ("HardSwish", {}, q(0.03, -20)), ("LeakyRelu", {"alpha": 0.2}, q(0.04, 10)),
    ("Add", {}, q(0.09, 4)), ("Sub", {}, q(0.09, 4)), ("Mul", {}, q(0.3, -1)),
])
def test_elementwise_and_activations_close_to_float(op, attrs, out_quant):
    binary = op in ("Add", "Sub", "Mul")
    inputs = [("a", "int8", (16, 16), q(0.05, -7))] + ([("b", "int8", (16,), q(0.03, 5))] if binary else [])
    graph = single_op(op, inputs, attrs, out_quant)
    arrays = [np.arange(-128, 128, dtype=np.int8).reshape(16, 16)] + ([random_int(np.int8, (16,))]
                                                                         if binary else [])
    assert np.abs(run_one(graph, *arrays).astype(int) - float_twin(graph, arrays)).max() <= 1


def test_leaky_relu_int16_close_to_float():
    graph = single_op("LeakyRelu", [("x", "int16", (64,), q(0.001))], {"alpha": 0.3}, q(0.0009))
    x = random_int(np.int16, (64,))
    assert np.abs(run_one(graph, x).astype(int) - float_twin(graph, [x])).max() <= 1


@pytest.mark.parametrize("op, tolerance", [("Sigmoid", 1), ("Tanh", 3)])
@pytest.mark.parametrize("scale", [2.0**-12, 2.0**-11, 0.0003, 0.001])
def test_int16_sigmoid_tanh_every_input_close_to_float(op, tolerance, scale):
    """TFLM's interpolated table (step 1/24) is within a few int16 steps of the float op."""
    graph = single_op(op, [("x", "int16", (65536,), q(scale))], {}, q(1 / 32768))
    x = np.arange(-32768, 32768, dtype=np.int16)
    assert np.abs(run_one(graph, x).astype(int) - float_twin(graph, [x])).max() <= tolerance


@pytest.mark.parametrize("in_quant, out_quant, what", [
    (q(0.001, 3), q(1 / 32768), "zero point"), (q(0.001), q(1 / 32768, 5), "zero point"),
    (q(0.001), q(1 / 256), "must have scale"), (q(6.0), q(1 / 32768), "too large")])
def test_int16_sigmoid_unsupported_quantization_is_refused(in_quant, out_quant, what):
    graph = single_op("Sigmoid", [("x", "int16", (4,), in_quant)], {}, out_quant)
    with pytest.raises(UnsupportedError, match=what):
        prepare_node(graph.nodes[0])


def test_softmax_int8_to_int16_close_to_float():
    graph = single_op("Softmax", [("x", "int8", (50, 10), q(0.2, -5))], {"beta": 0.7, "output_dtype": "int16"},
                      q(1 / 65536, -32768))
    assert graph.outputs[0].dtype == DType.INT16
    x = random_int(np.int8, (50, 10))
    twin = graph.copy()
    twin.nodes[0].attrs["output_dtype"] = "same"     # the float twin keeps float32 throughout
    output = run_one(graph, x)
    assert output.dtype == np.int16
    assert np.abs(output.astype(int) - float_twin(twin, [x])).max() <= 1


@pytest.mark.parametrize("mode, coordinates", [("nearest", "asymmetric"), ("nearest", "align_corners"),
                                               ("linear", "half_pixel"), ("linear", "align_corners"),
                                               ("linear", "asymmetric")])
def test_resize_close_to_float(mode, coordinates):
    nearest_mode = "round_prefer_ceil" if coordinates == "align_corners" else "floor"
    graph = single_op("Resize", [("x", "int8", (1, 3, 4, 2), q(0.1, 2))],
                      {"sizes": (1, 7, 9, 2), "mode": mode, "coordinate_transformation_mode": coordinates,
                       "nearest_mode": nearest_mode}, q(0.1, 2))
    x = random_int(np.int8, (1, 3, 4, 2))
    assert np.abs(run_one(graph, x).astype(int) - float_twin(graph, [x])).max() <= 1


# -- data movement and quantize / dequantize: exact ---------------------------------------
def test_shape_ops_move_raw_integers():
    x = random_int(np.int8, (1, 4, 5, 3))
    cases = [("Transpose", {"perm": (0, 3, 1, 2)}, x.transpose(0, 3, 1, 2)),
             ("Slice", {"starts": (1, 4), "ends": (4, 0), "axes": (1, 2), "steps": (2, -2)},
              x[:, 1:4:2, 4:0:-2]),
             ("Reshape", {"shape": (4, 15)}, x.reshape(4, 15)),
             ("Pad", {"pads": (0, 1, 0, 0, 0, 0, 2, 0)}, np.pad(x, ((0, 0), (1, 0), (0, 2), (0, 0)),
                                                                 constant_values=-9))]
    for op, attrs, expected in cases:
        graph = single_op(op, [("x", "int8", x.shape, q(0.1, -9))], attrs, q(0.1, -9))
        assert np.array_equal(run_one(graph, x), expected), op


def test_concat_copies_or_requantizes():
    graph = single_op("Concat", [("a", "int8", (1, 2), q(0.1, 0)), ("b", "int8", (1, 2), q(0.2, 1))],
                      {"axis": 1}, q(0.1, 0))
    # b requantized: (q - 1) * 0.2 / 0.1 -> [2 * 4, 2 * -3]
    assert run_one(graph, np.array([[1, -2]], np.int8), np.array([[5, -2]], np.int8)).tolist() == \
        [[1, -2, 8, -6]]


def test_quantize_requantize_dequantize_hand_worked():
    quantize = single_op("QuantizeLinear", [("x", "float32", (4,), None)],
                         {"to": "int8", "rounding": "half_away_from_zero"}, q(0.5, 1))
    values = np.array([0.25, -0.25, 0.75, 1000.0], np.float32)        # halves round away from 0
    assert run_one(quantize, values).tolist() == [2, 0, 3, 127]
    onnx_rounding = single_op("QuantizeLinear", [("x", "float32", (4,), None)], {"to": "int8"}, q(0.5, 1))
    assert run_one(onnx_rounding, values).tolist() == [1, 1, 3, 127]  # halves to even (ONNX)
    requantize_graph = single_op("QuantizeLinear", [("x", "int16", (3,), q(0.01))], {"to": "int8"},
                                 q(0.04, -3))
    assert run_one(requantize_graph, np.array([6, -6, 10000], np.int16)).tolist() == [-1, -5, 127]
    dequantize = single_op("DequantizeLinear", [("x", "int8", (2,), q(0.5, 1))], {}, None)
    assert run_one(dequantize, np.array([3, -1], np.int8)).tolist() == [1.0, -1.0]


# -- executor: batch rule, capture, prepare, errors ----------------------------------------
def small_network() -> Graph:
    graph = Graph("net")
    x = graph.add_input("x", DType.FLOAT32, (1, 4, 4, 2), layout="NHWC")
    quantized = graph.add_node("QuantizeLinear", [x], {"to": "int8"}, name="quantize").outputs[0]
    quantized.quant = q(0.05, 3)
    w = graph.add_constant("w", random_int(np.int8, (3, 3, 3, 2)), quant=q(np.full(3, 0.01), 0, 0))
    conv = graph.add_node("Conv", [quantized, w], {"layout": "NHWC", "pads": (1, 1, 1, 1)}, name="conv")
    conv.outputs[0].quant = q(0.04, -2)
    flat = graph.add_node("Reshape", [conv.outputs[0]], {"shape": (1, 48)}, name="flat").outputs[0]
    flat.quant = conv.outputs[0].quant
    out = graph.add_node("DequantizeLinear", [flat], name="dequantize").outputs[0]
    graph.outputs = [out]
    verify(graph)
    return graph


def test_batch_rule_and_capture():
    graph = small_network()
    batch = RNG.standard_normal((5, 1, 4, 4, 2)).astype(np.float32)
    batched = run_int(graph, {"x": batch}, batch=True)["dequantize"]
    assert batched.shape == (5, 1, 48) and batched.dtype == np.float32
    for index in range(5):
        assert np.array_equal(run_int(graph, {"x": batch[index]})["dequantize"], batched[index])
    captured = run_int(graph, {"x": batch[0]}, capture=True)
    assert set(captured) == {"x", "quantize", "conv", "flat", "dequantize"}
    assert captured["conv"].dtype == np.int8 and captured["conv"].shape == (1, 4, 4, 3)
    assert set(prepare_graph(graph)) == {"quantize", "conv", "flat", "dequantize"}


@pytest.mark.parametrize("feeds, batch, message", [
    ({}, False, "missing input"),
    ({"x": np.zeros((1, 4, 4, 2), np.float32), "y": np.zeros(1)}, False, "unknown input"),
    ({"x": np.zeros((1, 4, 4, 2), np.float64)}, False, "expected float32[1,4,4,2], got float64"),
    ({"x": np.zeros((2, 4, 4, 2), np.float32)}, False, "expected float32[1,4,4,2]"),
    ({"x": np.zeros((1, 4, 4, 2), np.float32)}, True, "batch=True adds one leading batch axis"),
    ({"x": np.full((1, 4, 4, 2), np.nan, np.float32)}, False, "NaN or Inf"),
    ({"x": np.zeros((0, 1, 4, 4, 2), np.float32)}, True, "empty"),
])
def test_bad_feeds_raise_data_error(feeds, batch, message):
    with pytest.raises(DataError, match="input|batch") as error:
        run_int(small_network(), feeds, batch=batch)
    assert message in str(error.value)


def test_unsupported_graphs_fail_before_running():
    float_graph = single_op("Relu", [("x", "float32", (4,), None)], {}, None)
    with pytest.raises(UnsupportedError, match="no kernel for op 'Relu'"):
        run_int(float_graph, {"x": np.zeros(4, np.float32)})
    unquantized = single_op("Add", [("a", "int8", (4,), None), ("b", "int8", (4,), None)], {}, None)
    with pytest.raises(UnsupportedError, match="no quantization parameters"):
        prepare_graph(unquantized)
    nchw = single_op("Conv", [("x", "int8", (1, 2, 3, 3), q(0.1))], {"layout": "NCHW"}, q(0.1),
                     [("w", np.ones((2, 2, 1, 1), np.int8), q([0.1, 0.1], 0, 0))])
    with pytest.raises(UnsupportedError, match="NHWC"):
        prepare_graph(nchw)


def test_requantize_fast_path_equals_composition():
    acc = RNG.integers(-(1 << 24), 1 << 24, (64, 8))
    multipliers = RNG.integers(1 << 30, 2**31 - 1, 8)
    shifts = np.array([0, -1, -3, -7, -12, -20, -31, 0])
    expected = np.clip(requantize(acc, multipliers, shifts) - 5, -100, 90).astype(np.int8)
    assert np.array_equal(requantize_and_clamp(acc, multipliers, shifts, -5, -100, 90, np.int8), expected)
    expected = np.clip(fp.multiply_by_quantized_multiplier(acc, multipliers[0], 3) + 1, -128, 127)
    assert np.array_equal(requantize_and_clamp(acc, multipliers[0], 3, 1, -128, 127, np.int8), expected)
