"""How the ONNX importer writes the ops added in issue 15: the exact lowerings (Sum / Max /
Min chains, Mean, Neg, Reciprocal, GlobalMaxPool, SoftmaxCrossEntropyLoss), the static
folding of shape computations (Shape -> Gather -> Concat -> Reshape, ConstantOfShape,
Range, Expand / Tile by computed counts), empty Split pieces, and the refusals that remain
(a Range of computed bounds). Numbers against onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from conftest import require
from mcudeploy.errors import UnsupportedError
from mcudeploy.importers import load_model
from mcudeploy.ir import verify
from mcudeploy.reference import run_float
from onnx_builders import make_model, save

ort = require("onnxruntime")


def check_against_onnxruntime(tmp_path, model: onnx.ModelProto, ops: list[str], feeds: dict) -> None:
    path = save(model, tmp_path)
    graph = load_model(path)
    verify(graph)
    assert [node.op for node in graph.nodes] == ops
    ours = run_float(graph, feeds)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for value, reference in zip(graph.outputs, session.run(None, feeds)):
        assert ours[value.name].dtype == reference.dtype
        np.testing.assert_allclose(ours[value.name], reference, rtol=1e-5, atol=1e-6)


def floats(*shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("op, ir_ops", [("Sum", ["Add", "Add"]), ("Max", ["Max", "Max"]),
                                        ("Min", ["Min", "Min"]), ("Mean", ["Add", "Add", "Div"])])
def test_variadic_ops_become_binary_chains(tmp_path, op, ir_ops):
    model = make_model([helper.make_node(op, ["a", "b", "c"], ["y"])],
                       {"a": [2, 3], "b": [1, 3], "c": [2, 1]}, ["y"])
    check_against_onnxruntime(tmp_path, model, ir_ops,
                              {"a": floats(2, 3), "b": floats(1, 3, seed=1), "c": floats(2, 1, seed=2)})


def test_neg_reciprocal_and_global_max_pool_lowerings(tmp_path):
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Reciprocal", ["n"], ["r"]),
             helper.make_node("GlobalMaxPool", ["r"], ["y"])]
    model = make_model(nodes, {"x": [1, 3, 4, 5]}, ["y"])
    check_against_onnxruntime(tmp_path, model, ["Mul", "Div", "ReduceMax"], {"x": floats(1, 3, 4, 5)})


def test_softmax_cross_entropy_is_log_softmax_then_nll(tmp_path):
    nodes = [helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss", "log_prob"], reduction="mean",
                              ignore_index=1)]
    model = make_model(nodes, {"x": [3, 5, 2], "t": [3, 2]}, {"loss": np.float32, "log_prob": np.float32},
                       input_dtypes={"t": np.int64})
    target = np.array([[0, 1], [4, 2], [1, 3]], np.int64)
    check_against_onnxruntime(tmp_path, model, ["LogSoftmax", "NegativeLogLikelihoodLoss"],
                              {"x": floats(3, 5, 2), "t": target})


def test_pytorch_style_shape_arithmetic_folds(tmp_path):
    """``Reshape(x, Concat(Gather(Shape(x), 0), [-1]))``, a ``Tile`` by ``ConstantOfShape``-made
    counts and a constant ``Expand``-ed to a computed shape: only the data ops remain (the
    expanded bias is a constant)."""
    inits = {"zero": np.array(0, np.int64), "minus_one": np.array([-1], np.int64),
             "rank2": np.array([2], np.int64), "two": np.array([2], np.int64)}
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"]),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["flat"]),
             helper.make_node("ConstantOfShape", ["rank2"], ["ones"],
                              value=onnx.numpy_helper.from_array(np.array([1], np.int64))),
             helper.make_node("Mul", ["ones", "two"], ["repeats"]),
             helper.make_node("Tile", ["flat", "repeats"], ["tiled"]),
             helper.make_node("Shape", ["tiled"], ["tiled_shape"]),
             helper.make_node("Expand", ["bias", "tiled_shape"], ["bias_full"]),
             helper.make_node("Add", ["tiled", "bias_full"], ["y"])]
    inits |= {"axes0": np.array([0], np.int64), "bias": floats(1, 1, seed=3)}
    model = make_model(nodes, {"x": [2, 3, 4]}, ["y"], inits, opset=13)
    check_against_onnxruntime(tmp_path, model, ["Reshape", "Tile", "Add"], {"x": floats(2, 3, 4)})


def test_empty_split_piece_is_dropped_by_concat(tmp_path):
    nodes = [helper.make_node("Split", ["x", "sizes"], ["kept", "empty"], axis=1),
             helper.make_node("Relu", ["kept"], ["r"]),
             helper.make_node("Concat", ["r", "empty"], ["y"], axis=1)]
    model = make_model(nodes, {"x": [2, 4]}, ["y"], {"sizes": np.array([4, 0], np.int64)}, opset=13)
    check_against_onnxruntime(tmp_path, model, ["Identity", "Relu", "Identity"], {"x": floats(2, 4)})


def test_range_of_computed_bounds_is_refused_with_the_reason(tmp_path):
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["y"])]
    model = make_model(nodes, {"limit": []}, {"y": np.float32},
                       {"start": np.array(0, np.float32), "delta": np.array(1, np.float32)})
    with pytest.raises(UnsupportedError, match=r"Range.*'limit' are computed at run time.*dynamic"):
        load_model(save(model, tmp_path))


def _i64(*values) -> np.ndarray:
    return np.array(values, np.int64)


X4 = [2, 3, 4, 5]
# name: (op, attributes, constant inputs, extra graph inputs (name -> (shape, dtype)), opset)
SINGLE_OPS = {
    "lrn": ("LRN", {"size": 3, "alpha": 0.2, "beta": 0.6, "bias": 1.5}, {}, {}, 13),
    "reduce_max_axes_input": ("ReduceMax", {"keepdims": 0}, {"axes": _i64(1, 3)}, {}, 18),
    "reduce_sum_all": ("ReduceSum", {"keepdims": 1}, {}, {}, 13),
    "reduce_l2": ("ReduceL2", {"axes": [2]}, {}, {}, 13),
    "reduce_log_sum_exp": ("ReduceLogSumExp", {"axes": [-1], "keepdims": 0}, {}, {}, 13),
    "arg_max_last_index": ("ArgMax", {"axis": 1, "select_last_index": 1}, {}, {}, 13),
    "top_k": ("TopK", {"axis": -1, "largest": 0}, {"k": _i64(3)}, {}, 13),
    "cum_sum_reverse": ("CumSum", {"exclusive": 1, "reverse": 1}, {"axis": np.array(2, np.int64)}, {}, 13),
    "gather_computed_indices": ("Gather", {"axis": 2}, {}, {"indices": ((2, 2), np.int64)}, 13),
    "gather_elements": ("GatherElements", {"axis": 3}, {}, {"indices": ((2, 3, 4, 2), np.int64)}, 13),
    "expand": ("Expand", {}, {"shape": _i64(3, 1, 1, 1, 1)}, {}, 13),
    "tile": ("Tile", {}, {"repeats": _i64(1, 2, 1, 3)}, {}, 13),
    "exp": ("Exp", {}, {}, {}, 13), "sqrt_abs": ("Sqrt", {}, {}, {}, 13), "erf": ("Erf", {}, {}, {}, 13),
    "softplus": ("Softplus", {}, {}, {}, 13), "selu": ("Selu", {}, {}, {}, 13),
    "gelu_tanh": ("Gelu", {"approximate": "tanh"}, {}, {}, 20),
    "layer_normalization": ("LayerNormalization", {"axis": 2}, {"scale": floats(4, 5, seed=4)}, {}, 17),
    "instance_normalization": ("InstanceNormalization", {},
                               {"scale": floats(3, seed=5), "bias": floats(3, seed=6)}, {}, 13),
    "log_softmax_opset11": ("LogSoftmax", {"axis": 1}, {}, {}, 11),
    "hardmax": ("Hardmax", {"axis": -1}, {}, {}, 13),
    "cast_to_int32": ("Cast", {"to": onnx.TensorProto.INT32}, {}, {}, 13),
    "mod_fmod": ("Mod", {"fmod": 1}, {"b": np.array(0.7, np.float32)}, {}, 13),
    "pow": ("Pow", {}, {"e": np.array(2.0, np.float32)}, {}, 13),
    "trilu_lower": ("Trilu", {"upper": 0}, {"k": np.array(1, np.int64)}, {}, 14),
    "space_to_depth": ("SpaceToDepth", {"blocksize": 2}, {}, {}, 13),
}


@pytest.mark.parametrize("case", sorted(SINGLE_OPS))
def test_single_op_matches_onnxruntime(tmp_path, case):
    op, attrs, constants, extra_inputs, opset = SINGLE_OPS[case]
    shape = [2, 3, 4, 6] if op == "SpaceToDepth" else X4
    inputs = {"x": shape, **{name: list(spec[0]) for name, spec in extra_inputs.items()}}
    dtypes = {name: spec[1] for name, spec in extra_inputs.items()}
    outputs = ["y", "indices"] if op == "TopK" else ["y"]
    node = helper.make_node(op, ["x", *extra_inputs, *constants], outputs, **attrs)
    output_types = {"y": np.int32 if op == "Cast" else np.int64 if op == "ArgMax" else np.float32,
                    "indices": np.int64}
    model = make_model([node], inputs, {name: output_types[name] for name in outputs}, constants,
                       opset=opset, input_dtypes=dtypes)
    path = save(model, tmp_path)
    graph = load_model(path)
    verify(graph)
    rng = np.random.default_rng(len(case))
    feeds = {"x": (np.abs(floats(*shape, seed=1)) if op == "Sqrt" else floats(*shape, seed=1) * 2)}
    for name, (input_shape, _) in extra_inputs.items():
        limit = shape[2] if op == "Gather" else shape[3]
        feeds[name] = rng.integers(-limit if op == "Gather" else 0, limit, input_shape).astype(np.int64)
    ours = run_float(graph, feeds)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for value, reference in zip(graph.outputs, session.run(None, feeds)):
        assert ours[value.name].dtype == reference.dtype and ours[value.name].shape == reference.shape
        np.testing.assert_allclose(ours[value.name], reference, rtol=1e-4, atol=1e-5)
