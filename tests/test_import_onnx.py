"""ONNX importer: tiny models built in code, imported, checked for IR structure, then
compared with onnxruntime (output shapes always; numbers through the float reference
executor, rtol 1e-4 / atol 1e-5)."""
from __future__ import annotations

import collections
import logging

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import shared_model
from mcudeploy.errors import UnsupportedError, UsageError
from mcudeploy.importers import load_model
from mcudeploy.importers.onnx_importer import import_onnx
from mcudeploy.ir import QuantParams, verify
from onnx_builders import float_reference, make_model, random_feeds, run_onnxruntime, save, single_op

RNG = np.random.default_rng(42)


def weights(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ops(graph) -> list[str]:
    return [node.op for node in graph.nodes]


def feeds_for(graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in graph.inputs:
        if value.dtype.is_float:
            feeds[value.name] = rng.standard_normal(value.shape).astype(value.dtype.numpy)
        else:
            feeds[value.name] = rng.integers(-100, 100, value.shape).astype(value.dtype.numpy)
    return feeds


def check(model: onnx.ModelProto, tmp_path, *, input_shapes=None, rtol=1e-4, atol=1e-5):
    """Import ``model``, verify it, compare output shapes (and numbers) with onnxruntime."""
    path = save(model, tmp_path)
    graph = load_model(path, input_shapes=input_shapes)
    verify(graph)
    feeds = feeds_for(graph)
    expected = run_onnxruntime(path, feeds)
    for value in graph.outputs:
        assert value.shape == expected[value.name].shape, value.name
    run_float = float_reference()
    if run_float is not None:
        got = run_float(graph, feeds)
        for name, array in expected.items():
            np.testing.assert_allclose(got[name], array, rtol=rtol, atol=atol, err_msg=name)
    return graph


# -- convolutions -------------------------------------------------------------------------
CONV_CASES = {
    "plain": ((1, 2, 7, 7), (4, 2, 3, 3), {}, (0, 0, 0, 0)),
    "pads": ((1, 2, 7, 7), (4, 2, 3, 3), {"pads": [1, 1, 1, 1]}, (1, 1, 1, 1)),
    "asymmetric_pads": ((1, 2, 7, 7), (4, 2, 3, 3), {"pads": [0, 1, 2, 1]}, (0, 1, 2, 1)),
    "same_upper_stride2": ((1, 2, 8, 8), (4, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
                           (0, 0, 1, 1)),
    "same_lower_stride2": ((1, 2, 8, 8), (4, 2, 3, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
                           (1, 1, 0, 0)),
    "valid": ((1, 2, 8, 8), (4, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}, (0, 0, 0, 0)),
    "dilations": ((1, 2, 9, 9), (4, 2, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
                  (2, 2, 2, 2)),
    "group2": ((1, 4, 6, 6), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, (1, 1, 1, 1)),
    "depthwise": ((1, 4, 6, 6), (4, 1, 3, 3), {"group": 4, "strides": [2, 1]}, (0, 0, 0, 0)),
    "rect_kernel": ((1, 3, 9, 7), (5, 3, 5, 3), {"strides": [1, 2]}, (0, 0, 0, 0)),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("case", CONV_CASES, ids=list(CONV_CASES))
def test_conv(tmp_path, case, bias):
    x_shape, w_shape, attrs, pads = CONV_CASES[case]
    inits = {"w": weights(*w_shape)}
    if bias:
        inits["b"] = weights(w_shape[0])
    graph = check(single_op("Conv", {"x": x_shape}, initializers=inits, attrs=attrs), tmp_path)
    assert ops(graph) == ["Conv"]
    conv = graph.nodes[0]
    assert conv.name == "op" and conv.attrs["pads"] == pads and conv.attrs["layout"] == "NCHW"
    assert conv.attrs["group"] == attrs.get("group", 1)
    assert (conv.inputs[2] is not None) == bias
    assert graph.inputs[0].layout == "NCHW"


@pytest.mark.parametrize("attrs", [{}, {"strides": [2], "pads": [1, 2]}, {"auto_pad": "SAME_UPPER"}])
def test_conv_1d_is_lifted_to_2d(tmp_path, attrs):
    model = single_op("Conv", {"x": [1, 3, 10]}, initializers={"w": weights(4, 3, 3)}, attrs=attrs)
    graph = check(model, tmp_path)
    assert ops(graph) == ["Unsqueeze", "Conv", "Squeeze"]
    assert graph.nodes[1].inputs[1].shape == (4, 3, 1, 3)
    assert graph.outputs[0].name == "y"


def test_conv_3d_is_refused(tmp_path):
    model = single_op("Conv", {"x": [1, 2, 4, 4, 4]}, initializers={"w": weights(2, 2, 1, 1, 1)})
    with pytest.raises(UnsupportedError, match="'op'.*3-D Conv"):
        load_model(save(model, tmp_path))


CONV_TRANSPOSE_CASES = {
    "stride2": ((1, 4, 5, 5), (4, 2, 3, 3), {"strides": [2, 2]}),
    "pads_output_padding": ((1, 4, 5, 5), (4, 2, 3, 3),
                            {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    "output_shape": ((1, 4, 5, 5), (4, 2, 3, 3), {"strides": [2, 2], "output_shape": [10, 10]}),
    "same_upper": ((1, 4, 5, 5), (4, 2, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "same_lower": ((1, 4, 5, 5), (4, 2, 4, 4), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    "group_dilation": ((1, 4, 5, 5), (4, 1, 3, 3), {"group": 2, "dilations": [2, 2]}),
    "1d": ((1, 4, 6), (4, 2, 3), {"strides": [2]}),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=list(CONV_TRANSPOSE_CASES))
def test_conv_transpose(tmp_path, case):
    x_shape, w_shape, attrs = CONV_TRANSPOSE_CASES[case]
    inits = {"w": weights(*w_shape), "b": weights(w_shape[1] * attrs.get("group", 1))}
    graph = check(single_op("ConvTranspose", {"x": x_shape}, initializers=inits, attrs=attrs),
                  tmp_path)
    assert "ConvTranspose" in ops(graph)


# -- matrix products and elementwise ------------------------------------------------------
@pytest.mark.parametrize("attrs", [{}, {"transB": 1}, {"transA": 1, "alpha": 0.5, "beta": 2.0}])
def test_gemm(tmp_path, attrs):
    a_shape = (6, 3) if attrs.get("transA") else (3, 6)
    b_shape = (5, 6) if attrs.get("transB") else (6, 5)
    model = single_op("Gemm", {"a": a_shape}, attrs=attrs,
                      initializers={"b": weights(*b_shape), "c": weights(5)})
    graph = check(model, tmp_path)
    assert ops(graph) == ["Gemm"] and graph.nodes[0].attrs["transB"] == attrs.get("transB", 0)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 6), (6, 3)), ((2, 4, 6), (6, 3)), ((6,), (6, 3))])
def test_matmul(tmp_path, a_shape, b_shape):
    graph = check(single_op("MatMul", {"a": a_shape}, initializers={"b": weights(*b_shape)}), tmp_path)
    assert ops(graph) == ["MatMul"]


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_binary_broadcast(tmp_path, op_type):
    divisor = np.abs(weights(3, 1, 1)) + 0.5
    graph = check(single_op(op_type, {"x": [1, 3, 4, 5]}, initializers={"c": divisor}), tmp_path)
    assert ops(graph) == [op_type] and graph.nodes[0].inputs[1].is_constant


# -- activations ----------------------------------------------------------------------------
@pytest.mark.parametrize("op_type,attrs", [
    ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("HardSwish", {}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("LeakyRelu", {"alpha": 0.2})])
def test_unary_activation(tmp_path, op_type, attrs):
    graph = check(single_op(op_type, {"x": [1, 3, 4, 4]}, attrs=attrs), tmp_path)
    assert ops(graph) == [op_type]
    assert all(graph.nodes[0].attrs[key] == pytest.approx(value) for key, value in attrs.items())


def test_prelu(tmp_path):
    graph = check(single_op("PRelu", {"x": [1, 3, 4, 4]}, initializers={"s": weights(3, 1, 1)}),
                  tmp_path)
    assert ops(graph) == ["PRelu"]


@pytest.mark.parametrize("opset,bounds,names", [
    (9, (0.0, 6.0), None), (11, (0.0, 6.0), ["x", "lo", "hi"]), (13, (-1.0, None), ["x", "lo"]),
    (13, (None, 0.5), ["x", "", "hi"]), (13, (None, None), ["x"])])
def test_clip(tmp_path, opset, bounds, names):
    low, high = bounds
    if opset < 11:
        model = single_op("Clip", {"x": [2, 8]}, attrs={"min": low, "max": high}, opset=opset)
    else:
        inits = {k: np.float32(v) for k, v in (("lo", low), ("hi", high)) if v is not None}
        model = single_op("Clip", {"x": [2, 8]}, initializers=inits, input_names=names, opset=opset)
    graph = check(model, tmp_path)
    clip = [n for n in graph.nodes if n.op == "Clip"]
    assert len(clip) == 1 and (clip[0].attrs["min"], clip[0].attrs["max"]) == (low, high)


@pytest.mark.parametrize("opset,axis,expected_ops", [
    (11, 1, ["Flatten", "Softmax", "Reshape"]), (11, -1, ["Softmax"]), (12, None, ["Flatten", "Softmax", "Reshape"]),
    (13, 1, ["Softmax"]), (13, None, ["Softmax"])])
def test_softmax_opset_semantics(tmp_path, opset, axis, expected_ops):
    attrs = {} if axis is None else {"axis": axis}
    graph = check(single_op("Softmax", {"x": [2, 3, 4, 5]}, attrs=attrs, opset=opset), tmp_path)
    assert ops(graph) == expected_ops
    if opset >= 13:
        assert graph.nodes[0].attrs["axis"] % 4 == (-1 if axis is None else axis) % 4


# -- normalization, pooling, reductions -------------------------------------------------------
def test_batch_normalization(tmp_path):
    inits = {"s": weights(3), "b": weights(3), "m": weights(3), "v": np.abs(weights(3)) + 0.1}
    graph = check(single_op("BatchNormalization", {"x": [1, 3, 4, 4]}, initializers=inits,
                            attrs={"epsilon": 1e-3}), tmp_path)
    assert ops(graph) == ["BatchNormalization"]
    assert graph.nodes[0].attrs["epsilon"] == pytest.approx(1e-3)


POOL_CASES = {
    "max_k3s2": ("MaxPool", (1, 3, 9, 9), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    "max_pads_ceil": ("MaxPool", (1, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2],
                                                "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    "max_same_upper": ("MaxPool", (1, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2],
                                                 "auto_pad": "SAME_UPPER"}),
    "max_dilated": ("MaxPool", (1, 3, 9, 9), {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    "avg_exclude_pad": ("AveragePool", (1, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    "avg_include_pad": ("AveragePool", (1, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                                      "count_include_pad": 1}),
    "avg_ceil": ("AveragePool", (1, 3, 8, 8), {"kernel_shape": [3, 3], "strides": [2, 2],
                                               "ceil_mode": 1}),
    "max_1d": ("MaxPool", (1, 3, 10), {"kernel_shape": [3], "strides": [2]}),
    "global_avg": ("GlobalAveragePool", (1, 3, 5, 6), {}),
    "global_avg_1d": ("GlobalAveragePool", (1, 3, 7), {}),
}


@pytest.mark.parametrize("case", POOL_CASES, ids=list(POOL_CASES))
def test_pooling(tmp_path, case):
    op_type, shape, attrs = POOL_CASES[case]
    graph = check(single_op(op_type, {"x": shape}, attrs=attrs), tmp_path)
    assert op_type in ops(graph)
    pool = graph.node("op")
    assert pool.attrs["layout"] == "NCHW"
    if op_type == "AveragePool":
        assert pool.attrs["count_include_pad"] == attrs.get("count_include_pad", 0)


def test_max_pool_indices_output_is_refused(tmp_path):
    model = single_op("MaxPool", {"x": [1, 1, 4, 4]}, attrs={"kernel_shape": [2, 2]}, outputs=2)
    model.graph.output[1].type.tensor_type.elem_type = onnx.TensorProto.INT64
    with pytest.raises(UnsupportedError, match="'op'.*Indices"):
        load_model(save(model, tmp_path))


@pytest.mark.parametrize("opset,axes,attrs,expected_axes", [
    (13, [2, 3], {}, (2, 3)), (13, [-1], {"keepdims": 0}, (3,)), (13, None, {}, (0, 1, 2, 3)),
    (18, [1], {}, (1,)), (18, None, {}, (0, 1, 2, 3)), (18, [], {"noop_with_empty_axes": 1}, None)])
def test_reduce_mean(tmp_path, opset, axes, attrs, expected_axes):
    attrs = dict(attrs)
    inits = {}
    if axes is not None and opset < 18:
        attrs["axes"] = axes
    elif axes is not None:
        inits["axes"] = np.array(axes, np.int64)
    graph = check(single_op("ReduceMean", {"x": [1, 3, 4, 5]}, attrs=attrs, initializers=inits,
                            opset=opset), tmp_path)
    if expected_axes is None:
        assert ops(graph) == ["Identity"]
    else:
        assert ops(graph) == ["ReduceMean"] and graph.nodes[0].attrs["axes"] == expected_axes


# -- data movement ----------------------------------------------------------------------------
@pytest.mark.parametrize("target,allowzero,expected", [
    ([0, -1], 0, (2, 60)), ([-1, 5], 0, (24, 5)), ([2, 3, 4, 5], 1, (2, 3, 4, 5)), ([0, 0, 20], 0, (2, 3, 20))])
def test_reshape(tmp_path, target, allowzero, expected):
    model = single_op("Reshape", {"x": [2, 3, 4, 5]}, attrs={"allowzero": allowzero},
                      initializers={"shape": np.array(target, np.int64)})
    graph = check(model, tmp_path)
    assert ops(graph) == ["Reshape"] and graph.nodes[0].attrs["shape"] == expected


@pytest.mark.parametrize("axis", [0, 1, 3, -1, 4])
def test_flatten(tmp_path, axis):
    graph = check(single_op("Flatten", {"x": [2, 3, 4, 5]}, attrs={"axis": axis}), tmp_path)
    assert ops(graph) == ["Flatten"] and graph.nodes[0].attrs["axis"] >= 0


@pytest.mark.parametrize("op_type,opset,axes,shape", [
    ("Squeeze", 11, [1, -1], [2, 1, 3, 1]), ("Squeeze", 13, [1], [2, 1, 3, 1]),
    ("Squeeze", 13, None, [2, 1, 3, 1]), ("Unsqueeze", 11, [0, -1], [2, 3]),
    ("Unsqueeze", 13, [1, 3], [2, 3])])
def test_squeeze_unsqueeze(tmp_path, op_type, opset, axes, shape):
    attrs, inits = {}, {}
    if axes is not None and opset < 13:
        attrs["axes"] = axes
    elif axes is not None:
        inits["axes"] = np.array(axes, np.int64)
    graph = check(single_op(op_type, {"x": shape}, attrs=attrs, initializers=inits, opset=opset),
                  tmp_path)
    assert ops(graph) == [op_type] and all(a >= 0 for a in graph.nodes[0].attrs["axes"])


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1]])
def test_transpose(tmp_path, perm):
    graph = check(single_op("Transpose", {"x": [2, 3, 4, 5]}, attrs={} if perm is None else {"perm": perm}),
                  tmp_path)
    assert graph.nodes[0].attrs["perm"] == tuple(perm or (3, 2, 1, 0))


def test_concat_with_constant(tmp_path):
    model = single_op("Concat", {"x": [1, 2, 3]}, initializers={"c": weights(1, 2, 4)}, attrs={"axis": -1})
    graph = check(model, tmp_path)
    assert ops(graph) == ["Concat"] and graph.nodes[0].attrs["axis"] == 2


@pytest.mark.parametrize("opset,split,attrs,outputs,expected", [
    (11, [2, 4], {"axis": 1}, 2, (2, 4)), (13, [1, 2, 3], {"axis": 1}, 3, (1, 2, 3)),
    (13, None, {"axis": -1}, 2, (4, 4)), (18, None, {"axis": 1, "num_outputs": 3}, 3, (2, 2, 2))])
def test_split(tmp_path, opset, split, attrs, outputs, expected):
    attrs, inits = dict(attrs), {}
    if split is not None and opset < 13:
        attrs["split"] = split
    elif split is not None:
        inits["split"] = np.array(split, np.int64)
    model = single_op("Split", {"x": [2, 6, 8]}, attrs=attrs, initializers=inits, opset=opset,
                      outputs=outputs)
    graph = check(model, tmp_path)
    assert ops(graph) == ["Split"] and graph.nodes[0].attrs["split"] == expected
    assert [v.name for v in graph.nodes[0].outputs] == [f"y{i}" for i in range(outputs)]


def test_split_uneven_num_outputs(tmp_path):
    model = single_op("Split", {"x": [2, 7]}, attrs={"axis": 1, "num_outputs": 3}, opset=18, outputs=3)
    graph = check(model, tmp_path)
    assert graph.nodes[0].attrs["split"] == (3, 3, 1)


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], None, None), ([0, -3], [2**62, -1], [1, 3], None), ([-1], [-(2**62)], [2], [-1]),
    ([1, 0], [5, 4], [3, 2], [2, 3])])
def test_slice(tmp_path, starts, ends, axes, steps):
    inits = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
    names = ["x", "starts", "ends"]
    for key, values in (("axes", axes), ("steps", steps)):
        names.append(key if values is not None else "")
        if values is not None:
            inits[key] = np.array(values, np.int64)
    model = single_op("Slice", {"x": [3, 4, 5, 6]}, initializers=inits, input_names=names)
    graph = check(model, tmp_path)
    assert ops(graph) == ["Slice"]
    assert all(abs(v) <= 7 for v in graph.nodes[0].attrs["ends"])


@pytest.mark.parametrize("mode,value,axes", [("constant", 1.5, None), ("reflect", None, None),
                                              ("edge", None, None), ("constant", None, [2, 3])])
def test_pad(tmp_path, mode, value, axes):
    pads = [0, 0, 1, 2, 0, 0, 2, 1] if axes is None else [1, 2, 2, 1]
    inits = {"pads": np.array(pads, np.int64)}
    names = ["x", "pads", "value" if value is not None else ""]
    if value is not None:
        inits["value"] = np.float32(value)
    if axes is not None:
        inits["axes"] = np.array(axes, np.int64)
        names.append("axes")
    model = single_op("Pad", {"x": [1, 2, 4, 5]}, initializers=inits, input_names=names,
                      attrs={"mode": mode}, opset=18)
    graph = check(model, tmp_path)
    assert graph.nodes[0].attrs["pads"] == (0, 0, 1, 2, 0, 0, 2, 1)
    assert graph.nodes[0].attrs["mode"] == mode


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(tmp_path, mode):
    graph = check(single_op("DepthToSpace", {"x": [1, 8, 3, 2]}, attrs={"blocksize": 2, "mode": mode}),
                  tmp_path)
    assert graph.nodes[0].attrs["mode"] == mode and graph.outputs[0].shape == (1, 2, 6, 4)


def test_identity_and_dropout(tmp_path):
    nodes = [helper.make_node("Identity", ["x"], ["a"], name="id"),
             helper.make_node("Dropout", ["a", "ratio"], ["y"], name="drop")]
    model = make_model(nodes, {"x": [2, 3]}, ["y"], {"ratio": np.float32(0.25)}, opset=13)
    graph = check(model, tmp_path)
    assert ops(graph) == ["Identity", "Dropout"] and graph.nodes[1].attrs["ratio"] == 0.25


def test_dropout_mask_is_refused(tmp_path):
    model = single_op("Dropout", {"x": [2, 3]}, outputs=["y", "mask"], opset=13)
    model.graph.output[1].type.tensor_type.elem_type = onnx.TensorProto.BOOL
    with pytest.raises(UnsupportedError, match="'op'.*mask"):
        load_model(save(model, tmp_path))


# -- resize -----------------------------------------------------------------------------------
RESIZE_CASES = {
    "nearest_scales_asym_floor": (11, "scales", [1, 1, 2, 2], {"mode": "nearest",
        "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}),
    "nearest_default_13": (13, "scales", [1, 1, 2, 3], {"mode": "nearest"}),
    "linear_sizes_half_pixel": (13, "sizes", [1, 2, 8, 10], {"mode": "linear"}),
    "linear_align_corners": (13, "sizes", [1, 2, 7, 9], {"mode": "linear",
        "coordinate_transformation_mode": "align_corners"}),
    "linear_pytorch_half_pixel": (13, "scales", [1, 1, 0.5, 0.5], {"mode": "linear",
        "coordinate_transformation_mode": "pytorch_half_pixel"}),
    "nearest_axes_18": (18, "sizes", [8, 10], {"mode": "nearest", "axes": [2, 3]}),
    "tf_half_pixel_for_nn": (13, "sizes", [1, 2, 8, 8], {"mode": "nearest",
        "coordinate_transformation_mode": "tf_half_pixel_for_nn"}),
}


def resize_model(opset, kind, values, attrs):
    inits = {kind: np.array(values, np.float32 if kind == "scales" else np.int64)}
    roi = ""
    if opset < 13:  # roi (and scales) are required inputs before opset 13
        inits["roi"], roi = np.array([], np.float32), "roi"
    names = ["x", roi, kind] if kind == "scales" else ["x", roi, "", kind]
    return single_op("Resize", {"x": [1, 2, 4, 4]}, initializers=inits, input_names=names,
                     attrs=attrs, opset=opset)


@pytest.mark.parametrize("case", RESIZE_CASES, ids=list(RESIZE_CASES))
def test_resize(tmp_path, case):
    opset, kind, values, attrs = RESIZE_CASES[case]
    graph = check(resize_model(opset, kind, values, attrs), tmp_path)
    resize = graph.nodes[0]
    assert ops(graph) == ["Resize"] and resize.attrs["mode"] == attrs["mode"]
    assert resize.attrs["sizes"] == graph.outputs[0].shape


@pytest.mark.parametrize("attrs,match", [
    ({"mode": "cubic"}, "cubic"), ({"mode": "linear", "antialias": 1}, "antialias"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, "roi")])
def test_resize_refusals(tmp_path, attrs, match):
    with pytest.raises(UnsupportedError, match=f"'op'.*{match}"):
        load_model(save(resize_model(18, "sizes", [1, 2, 8, 8], attrs), tmp_path))


UPSAMPLE_CASES = [(op, opset, mode, scales) for op, opset in (("Upsample", 9), ("Resize", 10), ("Upsample", 11))
                  for mode in ("nearest", "linear") for scales in ([1, 1, 2, 3], [1, 1, 1.5, 1.5])]


@pytest.mark.parametrize("op_type,opset,mode,scales", UPSAMPLE_CASES)
def test_old_upsample_and_resize(tmp_path, caplog, op_type, opset, mode, scales):
    """Upsample-9 and Resize-10 (upgraded by the version converter) and a deprecated
    Upsample in an opset-11 model (converted directly) all keep asymmetric / floor
    semantics; compared with onnxruntime running the opset-9 Upsample."""
    def build(opset_version):
        return single_op(op_type if opset_version == opset else "Upsample", {"x": [1, 2, 4, 4]},
                         attrs={"mode": mode}, opset=opset_version,
                         initializers={"s": np.array(scales, np.float32)})
    with caplog.at_level(logging.INFO):
        graph = load_model(save(build(opset), tmp_path))
    assert ops(graph) == ["Resize"] and graph.nodes[0].attrs["coordinate_transformation_mode"] == "asymmetric"
    assert graph.metadata["opset"] == opset
    if opset < 11:
        assert graph.metadata["opset_upgraded_to"] == 13 and f"from opset {opset}" in caplog.text
    feeds = feeds_for(graph)
    expected = run_onnxruntime(build(9), feeds)["y"]
    assert graph.outputs[0].shape == expected.shape
    run_float = float_reference()
    if run_float is not None:
        np.testing.assert_allclose(run_float(graph, feeds)["y"], expected, rtol=1e-4, atol=1e-5)


def test_opset10_model_is_upgraded(tmp_path):
    nodes = [helper.make_node("Slice", ["x", "s", "e"], ["a"]),
             helper.make_node("Clip", ["a"], ["y"], min=0.0, max=6.0)]
    inits = {"s": np.array([1], np.int64), "e": np.array([3], np.int64)}
    graph = check(make_model(nodes, {"x": [4, 5]}, ["y"], inits, opset=10), tmp_path)
    assert ops(graph) == ["Slice", "Clip"] and graph.metadata["opset_upgraded_to"] == 13
    assert graph.nodes[0].name == "Slice_0"  # unnamed nodes get <OpType>_<index>


# -- quantization -------------------------------------------------------------------------------
@pytest.mark.parametrize("zero_point", [np.int8(-3), np.uint8(128), np.int16(0)])
def test_quantize_dequantize_per_tensor(tmp_path, zero_point):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="quant"),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], name="dequant")]
    inits = {"s": np.float32(0.05), "zp": zero_point}
    graph = check(make_model(nodes, {"x": [1, 3, 4, 4]}, ["y"], inits, opset=21), tmp_path)
    quantized = graph.nodes[0].outputs[0]
    assert ops(graph) == ["QuantizeLinear", "DequantizeLinear"]
    assert graph.nodes[0].attrs["to"] == zero_point.dtype.name
    assert quantized.dtype.value == zero_point.dtype.name and graph.nodes[1].inputs[0] is quantized
    assert quantized.quant == QuantParams(np.float32(0.05), np.int64(zero_point))


def test_dequantize_per_axis_weights_feed_conv(tmp_path):
    scales = np.array([0.1, 0.2, 0.05, 0.3], np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["w"], axis=0, name="dq_w"),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    inits = {"wq": RNG.integers(-127, 127, (4, 2, 3, 3)).astype(np.int8), "ws": scales,
             "wzp": np.zeros(4, np.int8)}
    graph = check(make_model(nodes, {"x": [1, 2, 5, 5]}, ["y"], inits, opset=13), tmp_path)
    weight = graph.nodes[0].inputs[0]
    assert ops(graph) == ["DequantizeLinear", "Conv"] and weight.is_constant
    assert weight.dtype.value == "int8" and weight.quant.axis == 0
    np.testing.assert_array_equal(weight.quant.scale, scales)


# -- import-time evaluation -------------------------------------------------------------------------
def test_pytorch_style_shape_arithmetic_is_folded(tmp_path):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, plus Constant/Cast/Range/ConstantOfShape."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("z", 7, [], [0])),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch_1d"]),
        helper.make_node("Constant", [], ["minus_one"], value_ints=[-1]),
        helper.make_node("Concat", ["batch_1d", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="flatten"),
        helper.make_node("ConstantOfShape", ["ones_shape"], ["ones"],
                         value=helper.make_tensor("v", 1, [1], [2.0])),
        helper.make_node("Range", ["r0", "r1", "r2"], ["range"]),
        helper.make_node("Cast", ["range"], ["range_f"], to=1),
        helper.make_node("Mul", ["ones", "range_f"], ["scale"]),
        helper.make_node("Mul", ["flat", "scale"], ["y"], name="scale_mul"),
    ]
    inits = {"axes0": np.array([0], np.int64), "ones_shape": np.array([1, 48], np.int64),
             "r0": np.int64(0), "r1": np.int64(48), "r2": np.int64(1)}
    graph = check(make_model(nodes, {"x": ["batch", 3, 4, 4]}, ["y"], inits, opset=13), tmp_path)
    assert ops(graph) == ["Reshape", "Mul"]
    assert graph.node("flatten").attrs["shape"] == (1, 48)
    np.testing.assert_array_equal(graph.node("scale_mul").inputs[1].const, 2.0 * np.arange(48)[None])


def test_initializer_listed_as_graph_input_is_a_constant(tmp_path):
    model = single_op("Add", {"x": [2, 3]}, initializers={"c": weights(2, 3)})
    model.graph.input.append(helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2, 3]))
    graph = check(model, tmp_path)
    assert [v.name for v in graph.inputs] == ["x"] and graph.nodes[0].inputs[1].is_constant


# -- shapes -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", ["N", None, -1, 0])
def test_dynamic_batch_is_fixed_to_one_with_a_note(tmp_path, caplog, batch):
    model = single_op("Relu", {"images": [batch, 3, 8, 8]})
    with caplog.at_level(logging.INFO, logger="mcudeploy"):
        # onnxruntime takes a declared 0 literally, so that variant is only imported
        graph = load_model(save(model, tmp_path)) if batch == 0 else check(model, tmp_path)
    assert graph.inputs[0].shape == (1, 3, 8, 8) and graph.outputs[0].shape == (1, 3, 8, 8)
    assert "'images'" in caplog.text and "dynamic batch" in caplog.text


def test_input_shapes_override_reaches_internal_shapes(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["g"]),
             helper.make_node("Flatten", ["g"], ["y"])]
    model = make_model(nodes, {"x": ["N", 3, "H", "W"]}, ["y"], {"w": weights(8, 3, 3, 3)})
    graph = check(model, tmp_path, input_shapes={"x": (2, 3, 20, 12)})
    assert graph.inputs[0].shape == (2, 3, 20, 12) and graph.nodes[0].outputs[0].shape == (2, 8, 20, 12)
    assert graph.outputs[0].shape == (2, 8)


def test_input_shapes_with_unknown_name_lists_real_inputs(tmp_path):
    path = save(single_op("Relu", {"x": [1, 3]}), tmp_path)
    with pytest.raises(UsageError, match="'nope'.*inputs are 'x'"):
        load_model(path, input_shapes={"nope": (1, 3)})


def test_input_shapes_with_wrong_rank_is_refused(tmp_path):
    path = save(single_op("Relu", {"x": ["N", 3]}), tmp_path)
    with pytest.raises(UsageError, match="x=1,3,4: the input has rank 2"):
        load_model(path, input_shapes={"x": (1, 3, 4)})


def test_import_onnx_entry_point_sets_metadata(tmp_path):
    path = save(single_op("Relu", {"x": [1, 3]}, opset=15), tmp_path)
    graph = import_onnx(path, path.read_bytes(), input_shapes={})
    assert graph.metadata == {"format": "onnx", "opset": 15, "ir_version": 10,
                              "producer_name": "mcudeploy-tests", "producer_version": "",
                              "dynamic_dimensions": []}


def test_newer_opset_is_attempted_with_a_warning(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        graph = check(single_op("Relu", {"x": [1, 3]}, opset=22), tmp_path)
    assert ops(graph) == ["Relu"] and "opset 22 is newer" in caplog.text


def test_foreign_domain_is_refused(tmp_path):
    model = single_op("Relu", {"x": [1, 3]})
    model.graph.node[0].domain = "com.microsoft"
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(UnsupportedError, match="'op'.*com.microsoft"):
        load_model(save(model, tmp_path))


def test_unsupported_op_lists_supported_ops(tmp_path):
    model = single_op("LpPool", {"x": [1, 3, 4, 4]}, attrs={"kernel_shape": [2, 2]})
    with pytest.raises(UnsupportedError) as info:
        load_model(save(model, tmp_path))
    message = str(info.value)
    assert "'op'" in message and "'LpPool'" in message and "Conv, ConvTranspose" in message


def test_external_data_inside_the_folder_is_read(tmp_path):
    weight = weights(4, 3)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 16 + weight.tobytes())
    model = single_op("MatMul", {"x": [2, 4]}, initializers={"w": weight})
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "16"), ("length", str(weight.nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    graph = check(model, tmp_path)
    np.testing.assert_array_equal(graph.nodes[0].inputs[1].const, weight)


# -- a real model ---------------------------------------------------------------------------------
def test_mobilenetv2_matches_onnxruntime():
    path = shared_model("onnx/mobilenetv2_0.5_128.onnx")
    graph = load_model(path)
    verify(graph)
    counts = collections.Counter(ops(graph))
    assert counts == {"Conv": 52, "Clip": 35, "Add": 11, "BatchNormalization": 7, "Pad": 4,
                      "AveragePool": 1, "Reshape": 1, "MatMul": 1, "Softmax": 1}
    assert graph.inputs[0].shape == (1, 3, 128, 128) and graph.outputs[0].shape == (1, 2)
    session_model = onnx.load(str(path))
    feeds = random_feeds(session_model)
    every_tensor = [name for node in session_model.graph.node for name in node.output]
    session_model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in every_tensor)
    expected = run_onnxruntime(session_model, feeds)
    ir_shapes = {value.name: value.shape for value in graph.values()}
    assert {name: ir_shapes[name] for name in every_tensor} == \
        {name: expected[name].shape for name in every_tensor}
    run_float = float_reference()
    if run_float is not None:
        got = run_float(graph, feeds)
        np.testing.assert_allclose(got["Identity:0"], expected["Identity:0"], rtol=1e-4, atol=1e-5)
