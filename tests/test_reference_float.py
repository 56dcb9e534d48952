"""The float reference executor, op by op, against independent references.

Each test builds a one-node IR graph, runs it with ``run_float`` and compares with
onnxruntime on the equivalent ONNX model (built with ``onnx.helper``), with
``onnx.reference`` where onnxruntime lacks the variant, or with plain numpy. NHWC variants
run the NCHW ONNX model and transpose its result. Fused clamps are applied to the reference
output with ``np.clip``.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from mcudeploy.errors import DataError
from mcudeploy.ir import DType, Graph, QuantParams, all_ops, verify
from mcudeploy.reference import run_float
from mcudeploy.reference.float_kernels import all_kernels

RTOL, ATOL = 1e-4, 1e-5
OPSET = 21
rng = np.random.default_rng(1234)


def _rand(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# -- reference runners ----------------------------------------------------------------------
def onnx_run(op: str, inputs: list[np.ndarray | None], attrs: dict | None = None, *,
             outputs: int = 1, constant_from: int = 1, evaluator: str = "ort") -> list[np.ndarray]:
    """Run one ONNX node: ``inputs[:constant_from]`` are graph inputs, the rest initializers
    (``None`` leaves an optional input out)."""
    names, graph_inputs, initializers = [], [], []
    for index, array in enumerate(inputs):
        if array is None:
            names.append("")
            continue
        name = f"in{index}"
        names.append(name)
        if index < constant_from:
            elem = helper.np_dtype_to_tensor_dtype(array.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, array.shape))
        else:
            initializers.append(numpy_helper.from_array(array, name))
    out_names = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op, names, out_names, **(attrs or {}))
    graph = helper.make_graph([node], "single", graph_inputs,
                              [onnx.ValueInfoProto(name=n)
                               for n in out_names], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    feeds = {f"in{i}": a for i, a in enumerate(inputs[:constant_from]) if a is not None}
    if evaluator == "reference":
        return ReferenceEvaluator(model).run(None, feeds)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def ir_run(op: str, inputs: list[np.ndarray | None], attrs: dict | None = None, *,
           outputs: int | None = None, constant_from: int = 1,
           quant: dict[int, QuantParams] | None = None,
           output_quant: QuantParams | None = None) -> list[np.ndarray]:
    """Build a one-node IR graph (``inputs[:constant_from]`` graph inputs, the rest
    constants), verify it, run it with ``run_float``, return the outputs in order."""
    graph = Graph("single")
    quant = quant or {}
    values, feeds = [], {}
    for index, array in enumerate(inputs):
        if array is None:
            values.append(None)
        elif index < constant_from:
            value = graph.add_input(f"in{index}", DType.from_numpy(array.dtype), array.shape,
                                    quant=quant.get(index))
            feeds[value.name] = array
            values.append(value)
        else:
            values.append(graph.add_constant(f"in{index}", array, quant=quant.get(index)))
    node = graph.add_node(op, values, attrs or {}, name="node", outputs=outputs)
    if output_quant is not None:
        node.outputs[0].quant = output_quant
    graph.outputs = list(node.outputs)
    verify(graph)
    result = run_float(graph, feeds)
    return [result[v.name] for v in node.outputs]


def close(actual: np.ndarray, expected: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> None:
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def nchw_to_nhwc(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1))


def test_every_ir_op_has_a_kernel():
    assert set(all_kernels()) == set(all_ops())


# -- convolutions ---------------------------------------------------------------------------
CONV_CASES = {  # name: (in_channels, out_channels, kernel, attrs)
    "plain": (3, 4, 3, {}),
    "stride2_pads": (3, 5, 3, {"strides": (2, 2), "pads": (1, 0, 2, 1)}),
    "dilated": (2, 3, 3, {"dilations": (2, 1), "pads": (2, 1, 2, 1)}),
    "grouped": (4, 6, 3, {"group": 2, "pads": (1, 1, 1, 1)}),
    "depthwise": (5, 5, 3, {"group": 5, "pads": (1, 1, 1, 1), "strides": (2, 1)}),
    "depthwise_multiplier": (3, 6, 3, {"group": 3, "dilations": (1, 2)}),
    "pointwise": (8, 4, 1, {}),
    "rect_kernel_clamp": (3, 4, (1, 3), {"activation_min": 0.0, "activation_max": 0.5}),
}


def _conv_weights_nhwc(weights: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(weights.transpose(0, 2, 3, 1))  # [O,C/g,kH,kW] -> [O,kH,kW,C/g]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case, bias, layout):
    in_channels, out_channels, kernel, attrs = CONV_CASES[case]
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    group = attrs.get("group", 1)
    x = _rand(2, in_channels, 9, 8)
    w = _rand(out_channels, in_channels // group, kh, kw)
    b = _rand(out_channels) if bias else None
    onnx_attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()
                  if not k.startswith("activation")}
    expected = onnx_run("Conv", [x, w, b], onnx_attrs)[0]
    expected = np.clip(expected, attrs.get("activation_min"), attrs.get("activation_max")) \
        if "activation_min" in attrs else expected
    if layout == "NHWC":
        x, w, expected = nchw_to_nhwc(x), _conv_weights_nhwc(w), nchw_to_nhwc(expected)
    close(ir_run("Conv", [x, w, b], {**attrs, "layout": layout})[0], expected)


CONV_TRANSPOSE_CASES = {  # name: (in_channels, out_channels, kernel, attrs)
    "plain": (3, 2, 3, {}),
    "stride2": (2, 3, 3, {"strides": (2, 2)}),
    "stride2_pads_outpad": (2, 3, 3, {"strides": (2, 2), "pads": (1, 0, 1, 1), "output_padding": (1, 1)}),
    "dilated": (2, 2, 2, {"dilations": (2, 2), "strides": (1, 2)}),
    "grouped": (4, 6, 3, {"group": 2, "strides": (2, 1), "pads": (1, 1, 0, 0)}),
    "clamp": (2, 2, 3, {"activation_min": -0.5, "activation_max": None}),
}


def _transpose_weights_nhwc(weights: np.ndarray, group: int) -> np.ndarray:
    """ONNX ``[C, O/g, kH, kW]`` -> IR NHWC ``[O, kH, kW, C/g]`` (output channel g*O/g + k)."""
    channels, per_group_out, kh, kw = weights.shape
    w = weights.reshape(group, channels // group, per_group_out, kh, kw)
    return np.ascontiguousarray(w.transpose(0, 2, 3, 4, 1).reshape(group * per_group_out, kh, kw, -1))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSE_CASES))
def test_conv_transpose(case, layout):
    in_channels, out_channels, kernel, attrs = CONV_TRANSPOSE_CASES[case]
    group = attrs.get("group", 1)
    x = _rand(1, in_channels, 5, 4)
    w = _rand(in_channels, out_channels // group, kernel, kernel)
    b = _rand(out_channels)
    onnx_attrs = {k: list(v) for k, v in attrs.items() if not k.startswith("activation")
                  and isinstance(v, tuple)}
    onnx_attrs.update({k: v for k, v in attrs.items() if k == "group"})
    expected = onnx_run("ConvTranspose", [x, w, b], onnx_attrs)[0]
    if "activation_min" in attrs:
        expected = np.clip(expected, attrs["activation_min"], attrs["activation_max"])
    if layout == "NHWC":
        x, w, expected = nchw_to_nhwc(x), _transpose_weights_nhwc(w, group), nchw_to_nhwc(expected)
    close(ir_run("ConvTranspose", [x, w, b], {**attrs, "layout": layout})[0], expected)


# -- matrix products ------------------------------------------------------------------------
@pytest.mark.parametrize("trans_a,trans_b,alpha,beta,c_shape", [
    (0, 0, 1.0, 1.0, (5,)), (0, 1, 1.0, 1.0, (3, 5)), (1, 0, 0.5, 2.0, (1, 5)),
    (1, 1, 2.0, 0.0, None), (0, 1, 1.0, 1.0, (3, 1)),
])
def test_gemm(trans_a, trans_b, alpha, beta, c_shape):
    a = _rand(*((4, 3) if trans_a else (3, 4)))
    b = _rand(*((5, 4) if trans_b else (4, 5)))
    c = _rand(*c_shape) if c_shape else None
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}
    close(ir_run("Gemm", [a, b, c], attrs)[0], onnx_run("Gemm", [a, b, c], attrs)[0])


def test_gemm_fused_clamp():
    a, b = _rand(3, 4), _rand(5, 4)
    expected = np.clip(onnx_run("Gemm", [a, b], {"transB": 1})[0], 0.0, 6.0)
    close(ir_run("Gemm", [a, b], {"transB": 1, "activation_min": 0, "activation_max": 6})[0], expected)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                             ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 5)),
                                             ((3, 4), (4,))])
def test_matmul(a_shape, b_shape):
    a, b = _rand(*a_shape), _rand(*b_shape)
    close(ir_run("MatMul", [a, b], constant_from=2)[0], onnx_run("MatMul", [a, b], constant_from=2)[0])


# -- elementwise ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)),
                                             ((2, 1, 4), (3, 1)), ((), (2, 3))])
def test_binary(op, a_shape, b_shape):
    a, b = _rand(*a_shape), _rand(*b_shape)
    close(ir_run(op, [a, b], constant_from=2)[0], onnx_run(op, [a, b], constant_from=2)[0])


@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_binary_fused_clamp(op):
    a, b = _rand(4, 5), _rand(5)
    expected = np.clip(onnx_run(op, [a, b])[0], -0.25, 0.75)
    close(ir_run(op, [a, b], {"activation_min": -0.25, "activation_max": 0.75})[0], expected)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_integer_div_truncates_toward_zero(dtype):
    a = np.array([7, -7, 7, -7, 0, 5, -128 if dtype == np.int8 else -9], dtype=dtype)
    b = np.array([2, 2, -2, -2, 3, 5, 3], dtype=dtype)
    expected = onnx_run("Div", [a, b], constant_from=2)[0]
    close(ir_run("Div", [a, b], constant_from=2)[0], expected)
    np.testing.assert_array_equal(expected, np.trunc(a / b).astype(dtype))


@pytest.mark.parametrize("slope_shape", [(1,), (3, 1, 1), (1, 5)])
def test_prelu(slope_shape):
    x, slope = _rand(2, 3, 4, 5), _rand(*slope_shape)
    close(ir_run("PRelu", [x, slope])[0], onnx_run("PRelu", [x, slope])[0])


# -- activations ----------------------------------------------------------------------------
@pytest.mark.parametrize("op,attrs", [
    ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("HardSwish", {}),
    ("HardSigmoid", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
    ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.2}),
    ("Softmax", {}), ("Softmax", {"axis": 1}), ("Softmax", {"axis": 0}),
])
def test_unary(op, attrs):
    x = _rand(3, 4, 5) * 4
    close(ir_run(op, [x], attrs)[0], onnx_run(op, [x], attrs)[0])


def test_sigmoid_and_softmax_are_stable_on_large_inputs():
    x = np.array([[-1000.0, 0.0, 1000.0, 88.0, -88.0]], dtype=np.float32)
    close(ir_run("Sigmoid", [x])[0], onnx_run("Sigmoid", [x])[0])
    close(ir_run("Softmax", [x])[0], onnx_run("Softmax", [x])[0])


def test_softmax_beta_against_numpy():
    x = _rand(2, 6)
    z = np.exp(0.5 * x.astype(np.float64))
    close(ir_run("Softmax", [x], {"beta": 0.5})[0], (z / z.sum(-1, keepdims=True)).astype(np.float32))


@pytest.mark.parametrize("low,high", [(0.0, 6.0), (-1.0, None), (None, 0.5), (None, None)])
def test_clip(low, high):
    x = _rand(3, 7) * 4
    bounds = [None if v is None else np.array(v, np.float32) for v in (low, high)]
    expected = onnx_run("Clip", [x, *bounds])[0]
    close(ir_run("Clip", [x], {"min": low, "max": high})[0], expected)


# -- pooling and reductions -----------------------------------------------------------------
POOL_CASES = {
    "k2s2": {"kernel_shape": (2, 2), "strides": (2, 2)},
    "k3s1_pads": {"kernel_shape": (3, 3), "pads": (1, 1, 1, 1)},
    "k3s2_asym_pads": {"kernel_shape": (3, 3), "strides": (2, 2), "pads": (0, 1, 1, 0)},
    "ceil": {"kernel_shape": (3, 3), "strides": (2, 2), "ceil_mode": 1},
    "ceil_pads": {"kernel_shape": (2, 3), "strides": (2, 2), "pads": (1, 0, 1, 1), "ceil_mode": 1},
    "dilated": {"kernel_shape": (2, 2), "dilations": (2, 2), "pads": (1, 1, 1, 1)},
}


def _pool_expected(op, x, attrs):
    onnx_attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()}
    return onnx_run(op, [x], onnx_attrs)[0]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_max_pool(case, layout):
    x = _rand(2, 3, 9, 8)
    expected = _pool_expected("MaxPool", x, POOL_CASES[case])
    if layout == "NHWC":
        x, expected = nchw_to_nhwc(x), nchw_to_nhwc(expected)
    close(ir_run("MaxPool", [x], {**POOL_CASES[case], "layout": layout})[0], expected)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_average_pool(case, count_include_pad, layout):
    x = _rand(2, 3, 9, 8)
    attrs = {**POOL_CASES[case], "count_include_pad": count_include_pad}
    expected = _pool_expected("AveragePool", x, attrs)
    if layout == "NHWC":
        x, expected = nchw_to_nhwc(x), nchw_to_nhwc(expected)
    close(ir_run("AveragePool", [x], {**attrs, "layout": layout})[0], expected)


def test_pool_fused_clamp():
    x = _rand(1, 2, 6, 6)
    expected = np.clip(_pool_expected("MaxPool", x, POOL_CASES["k2s2"]), 0.0, 1.0)
    close(ir_run("MaxPool", [x], {**POOL_CASES["k2s2"], "activation_min": 0.0,
                                  "activation_max": 1.0})[0], expected)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_average_pool(layout):
    x = _rand(2, 3, 5, 7)
    expected = onnx_run("GlobalAveragePool", [x])[0]
    if layout == "NHWC":
        x, expected = nchw_to_nhwc(x), nchw_to_nhwc(expected)
    close(ir_run("GlobalAveragePool", [x], {"layout": layout})[0], expected)


@pytest.mark.parametrize("axes,keepdims", [((1,), 1), ((1, 2), 0), ((-1,), 1), ((0, 1, 2), 0)])
def test_reduce_mean(axes, keepdims):
    x = _rand(2, 3, 4)
    expected = onnx_run("ReduceMean", [x, np.array(axes, np.int64)], {"keepdims": keepdims})[0]
    close(ir_run("ReduceMean", [x], {"axes": axes, "keepdims": keepdims})[0], expected)


# -- normalisation --------------------------------------------------------------------------
@pytest.mark.parametrize("shape,layout", [((2, 3, 4, 5), "NCHW"), ((2, 3, 4, 5), "NHWC"),
                                          ((4, 3), "NCHW"), ((2, 3, 6), "NCHW")])
def test_batch_normalization(shape, layout):
    x = _rand(*shape)
    channels = shape[1]
    params = [_rand(channels), _rand(channels), _rand(channels), rng.uniform(0.5, 2, channels).astype(np.float32)]
    expected = onnx_run("BatchNormalization", [x, *params], {"epsilon": 1e-3})[0]
    if layout == "NHWC":
        x, expected = nchw_to_nhwc(x), nchw_to_nhwc(expected)
    close(ir_run("BatchNormalization", [x, *params], {"epsilon": 1e-3, "layout": layout})[0], expected)


# -- data movement --------------------------------------------------------------------------
def test_reshape_family_against_numpy():
    x = _rand(2, 1, 3, 4)
    close(ir_run("Reshape", [x], {"shape": (6, 4)})[0], x.reshape(6, 4))
    close(ir_run("Flatten", [x], {"axis": 2})[0], x.reshape(2, 12))
    close(ir_run("Flatten", [x], {"axis": 0})[0], x.reshape(1, 24))
    close(ir_run("Squeeze", [x], {"axes": (1,)})[0], x[:, 0])
    close(ir_run("Unsqueeze", [x], {"axes": (0, -1)})[0], x[None, ..., None])
    close(ir_run("Identity", [x])[0], x)
    close(ir_run("Dropout", [x], {"ratio": 0.3})[0], x)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (3, 2, 1, 0), (0, 1, 2, 3)])
def test_transpose(perm):
    x = _rand(2, 3, 4, 5)
    close(ir_run("Transpose", [x], {"perm": perm})[0], onnx_run("Transpose", [x], {"perm": list(perm)})[0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis):
    parts = [_rand(2, 3, 4), _rand(2, 3, 4), _rand(2, 3, 4)]
    close(ir_run("Concat", parts, {"axis": axis}, constant_from=3)[0],
          onnx_run("Concat", parts, {"axis": axis}, constant_from=3)[0])


@pytest.mark.parametrize("axis,split", [(1, (2, 4)), (-1, (1, 1, 3)), (0, (3,))])
def test_split(axis, split):
    x = _rand(3, 6, 5)
    actual = ir_run("Split", [x], {"axis": axis, "split": split}, outputs=len(split))
    expected = onnx_run("Split", [x, np.array(split, np.int64)], {"axis": axis}, outputs=len(split))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        close(a, e)


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ((1,), (3,), (0,), (1,)), ((0, 1), (-1, 100), (1, 2), (2, 1)),
    ((-1,), (-100,), (2,), (-1,)), ((3, 4), (0, 1), (1, -1), (-2, -1)),
])
def test_slice(starts, ends, axes, steps):
    x = _rand(4, 5, 6)
    as_arrays = [np.array(v, np.int64) for v in (starts, ends, axes, steps)]
    expected = onnx_run("Slice", [x, *as_arrays])[0]
    attrs = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    close(ir_run("Slice", [x], attrs)[0], expected)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pads", [(0, 1, 2, 0, 2, 1), (1, 0, 0, 0, 2, 3), (0, -1, 2, 1, 0, -2)])
def test_pad(mode, pads):
    x = _rand(3, 4, 5)
    value = 1.5 if mode == "constant" else 0.0
    expected = onnx_run("Pad", [x, np.array(pads, np.int64), np.array(value, np.float32)], {"mode": mode})[0]
    close(ir_run("Pad", [x], {"pads": pads, "mode": mode, "value": value})[0], expected)


def test_pad_quantized_uses_zero_point():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    quant = {0: QuantParams(np.array([0.5]), np.array([-3]))}
    y = ir_run("Pad", [x], {"pads": (0, 1, 0, 1)}, quant=quant)[0]
    np.testing.assert_array_equal(y[:, 0], [-3, -3])
    np.testing.assert_array_equal(y[:, 1:4], x)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(mode, layout):
    x = _rand(2, 12, 3, 4)
    expected = onnx_run("DepthToSpace", [x], {"blocksize": 2, "mode": mode})[0]
    if layout == "NHWC":
        x, expected = nchw_to_nhwc(x), nchw_to_nhwc(expected)
    close(ir_run("DepthToSpace", [x], {"blocksize": 2, "mode": mode, "layout": layout})[0], expected)


# -- resize ---------------------------------------------------------------------------------
COORDINATE_MODES = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                    "tf_half_pixel_for_nn"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def _resize_expected(x, sizes, attrs, evaluator="ort"):
    inputs = [x, None, None, np.array(sizes, np.int64)]
    return onnx_run("Resize", inputs, attrs, evaluator=evaluator)[0]


@pytest.mark.parametrize("sizes", [(1, 2, 8, 9), (1, 2, 3, 2), (1, 2, 7, 1)])
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
def test_resize_nearest(coordinate_mode, nearest_mode, sizes):
    x = _rand(1, 2, 4, 5)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coordinate_mode,
             "nearest_mode": nearest_mode}
    close(ir_run("Resize", [x], {**attrs, "sizes": sizes})[0], _resize_expected(x, sizes, attrs))


@pytest.mark.parametrize("sizes", [(1, 2, 8, 9), (1, 2, 3, 2), (1, 2, 7, 1), (1, 2, 4, 13)])
@pytest.mark.parametrize("coordinate_mode", COORDINATE_MODES)
def test_resize_linear(coordinate_mode, sizes):
    x = _rand(1, 2, 4, 5)
    attrs = {"mode": "linear", "coordinate_transformation_mode": coordinate_mode}
    close(ir_run("Resize", [x], {**attrs, "sizes": sizes})[0], _resize_expected(x, sizes, attrs))


@pytest.mark.parametrize("sizes", [(2, 5, 9), (3, 3, 2, 8), (6,)])
def test_resize_linear_any_axes_against_onnx_reference(sizes):
    x = _rand(*((3, 4, 5) if len(sizes) == 3 else (2, 4, 3, 5) if len(sizes) == 4 else (4,)))
    attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
    expected = _resize_expected(x, sizes, attrs, evaluator="reference")
    close(ir_run("Resize", [x], {**attrs, "sizes": sizes})[0], expected.astype(np.float32))


# -- quantization ---------------------------------------------------------------------------
@pytest.mark.parametrize("to", ["int8", "uint8", "int16"])
def test_quantize_linear_per_tensor(to):
    x = np.concatenate([_rand(50) * 3, np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1000, -1000], np.float32) * 0.02])
    dtype = np.dtype(to)
    scale, zero_point = np.float32(0.02), dtype.type(3)
    expected = onnx_run("QuantizeLinear", [x, np.array(scale), np.array(zero_point)])[0]
    params = QuantParams(np.array([scale]), np.array([zero_point]))
    close(ir_run("QuantizeLinear", [x], {"to": to}, output_quant=params)[0], expected)


def test_quantize_and_dequantize_per_axis():
    x = _rand(2, 3, 4) * 2
    scales = np.array([0.01, 0.02, 0.05], np.float32)
    zero_points = np.array([-5, 0, 7], np.int8)
    expected = onnx_run("QuantizeLinear", [x, scales, zero_points], {"axis": 1})[0]
    params = QuantParams(scales, zero_points, axis=1)
    q = ir_run("QuantizeLinear", [x], {"to": "int8"}, output_quant=params)[0]
    close(q, expected)
    expected_real = onnx_run("DequantizeLinear", [q, scales, zero_points], {"axis": 1})[0]
    close(ir_run("DequantizeLinear", [q], quant={0: params})[0], expected_real, rtol=0, atol=0)


def test_requantize_integer_input():
    q = np.arange(-128, 128, 16, dtype=np.int8)
    in_params = QuantParams(np.array([0.1]), np.array([4]))
    out_params = QuantParams(np.array([0.03]), np.array([-2]))
    real = (0.1 * (q.astype(np.float64) - 4)).astype(np.float32)
    expected = np.clip(np.rint(real / np.float32(0.03)) - 2, -32768, 32767).astype(np.int16)
    actual = ir_run("QuantizeLinear", [q], {"to": "int16"}, quant={0: in_params},
                    output_quant=out_params)[0]
    close(actual, expected)


# -- the executor ---------------------------------------------------------------------------
def _two_node_graph() -> Graph:
    graph = Graph("two")
    x = graph.add_input("x", DType.FLOAT32, (2, 3))
    relu = graph.add_node("Relu", [x], name="relu")
    scale = graph.add_constant("scale", np.full((3,), 2.0, np.float32))
    mul = graph.add_node("Mul", [relu.outputs[0], scale], name="mul")
    graph.outputs = list(mul.outputs)
    verify(graph)
    return graph


def test_capture_returns_every_value():
    graph = _two_node_graph()
    x = _rand(2, 3)
    plain = run_float(graph, {"x": x})
    assert list(plain) == ["mul"]
    captured = run_float(graph, {"x": x}, capture=True)
    assert set(captured) == {"x", "relu", "mul"}
    close(captured["relu"], np.maximum(x, 0))
    close(captured["mul"], np.maximum(x, 0) * 2)
    close(plain["mul"], captured["mul"])


@pytest.mark.parametrize("feeds,words", [
    ({}, ["missing", "x"]),
    ({"x": np.zeros((2, 3), np.float32), "y": np.zeros(1)}, ["unknown", "y"]),
    ({"x": np.zeros((3, 2), np.float32)}, ["'x'", "float32[2,3]", "float32[3,2]"]),
    ({"x": np.zeros((2, 3), np.float64)}, ["'x'", "float32[2,3]", "float64[2,3]"]),
    ({"x": np.array([[0, np.nan, 1], [0, 0, np.inf]], np.float32)}, ["'x'", "2 of 6", "NaN"]),
])
def test_bad_feeds_raise_data_error(feeds, words):
    with pytest.raises(DataError) as info:
        run_float(_two_node_graph(), feeds)
    for word in words:
        assert word in str(info.value)


def test_intermediates_are_freed_after_their_last_reader():
    from mcudeploy.reference.float_executor import _last_uses
    assert _last_uses(_two_node_graph()) == {0: ["x"], 1: ["relu"]}


@pytest.mark.parametrize("op,inputs,expected", [
    ("Add", [np.array([1, 2], np.int64), np.array([3], np.int64)], np.array([4, 5], np.int64)),
    ("Mul", [np.array([[2], [3]], np.int64), np.array([4, 5], np.int64)],
     np.array([[8, 10], [12, 15]], np.int64)),
    ("MatMul", [np.array([[1, 2]], np.int32), np.array([[3], [4]], np.int32)],
     np.array([[11]], np.int32)),
    ("Concat", [np.array([1], np.int64), np.array([7, 8], np.int64)], np.array([1, 7, 8], np.int64)),
])
def test_integer_inputs_follow_numpy(op, inputs, expected):
    attrs = {"axis": 0} if op == "Concat" else {}
    close(ir_run(op, inputs, attrs, constant_from=2)[0], expected, rtol=0, atol=0)
