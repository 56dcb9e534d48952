"""Pipelines on whole models: imported ONNX / TFLite CNNs through ``cleanup``.

Structure: no BatchNormalization, no separate Relu / Clip, no Transpose inside the graph.
Numbers: ``run_float`` before vs after the pipeline, and against onnxruntime.
"""
from __future__ import annotations

import numpy as np
import pytest

from _pass_helpers import ATOL, RTOL, assert_same_function, op_counts, random_feeds
from conftest import require, shared_model
from mcudeploy.errors import UsageError
from mcudeploy.importers import load_model
from mcudeploy.ir import Graph, verify
from mcudeploy.passes import PIPELINES, run_pipeline
from mcudeploy.reference import run_float

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MOBILENET = "onnx/mobilenetv2_0.5_128.onnx"


def inner_transposes(graph: Graph) -> list[str]:
    inputs, outputs = set(map(id, graph.inputs)), set(map(id, graph.outputs))
    return [n.name for n in graph.nodes if n.op == "Transpose"
            and id(n.inputs[0]) not in inputs and id(n.outputs[0]) not in outputs]


def onnxruntime_outputs(path, graph: Graph, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})


def _nhwc(name: str, array: np.ndarray) -> np.ndarray:
    return array.transpose(0, 2, 3, 1) if array.ndim == 4 else array


def _run_cleanup(path, pipeline: str = "cleanup") -> tuple[Graph, Graph]:
    graph = load_model(path)
    before = graph.copy()
    run_pipeline(graph, pipeline)
    verify(graph)
    return before, graph


def _assert_clean(graph: Graph) -> None:
    counts = op_counts(graph)
    assert not {"BatchNormalization", "Relu", "Clip", "Identity", "Dropout"} & set(counts), counts
    assert inner_transposes(graph) == []
    assert all(n.attrs["layout"] == "NHWC" for n in graph.nodes if "layout" in n.attrs)


def test_mobilenet_v2_onnx_cleanup():
    path = shared_model(MOBILENET)
    before, graph = _run_cleanup(path)
    _assert_clean(graph)
    assert op_counts(graph).get("Transpose", 0) <= 1
    assert sum(n.attrs.get("activation_max") == 6.0 for n in graph.nodes) == 35  # the 35 Relu6
    feeds = random_feeds(before)
    assert_same_function(before, graph)
    # every tensor that kept its name and shape (e.g. the logits before Softmax) agrees too
    old, new = run_float(before, feeds, capture=True), run_float(graph, feeds, capture=True)
    common = [n for n in old if n in new and old[n].shape == new[n].shape and n not in feeds]
    assert "StatefulPartitionedCall/mobilenet_v2_128_0.5/predictions_dense/BiasAdd:0" in common
    for name in common:
        np.testing.assert_allclose(new[name], old[name], rtol=RTOL, atol=ATOL, err_msg=name)
    expected = onnxruntime_outputs(path, before, feeds)
    actual = run_float(graph, feeds)
    for value, want in zip(graph.outputs, expected):
        np.testing.assert_allclose(actual[value.name], want, rtol=RTOL, atol=ATOL)


def test_mobilenet_v2_onnx_nhwc_io_has_no_transpose():
    before, graph = _run_cleanup(shared_model(MOBILENET), "cleanup_nhwc_io")
    _assert_clean(graph)
    assert "Transpose" not in op_counts(graph)
    assert graph.inputs[0].layout == "NHWC" and graph.inputs[0].shape == (1, 128, 128, 3)
    assert_same_function(before, graph, feed_map=_nhwc)


@pytest.mark.parametrize("model", ["mlperf_tiny/resnet8_float.tflite",
                                   "mlperf_tiny/mobilenetv1_vww_float.tflite",
                                   "mlperf_tiny/fc_autoencoder_float.tflite"])
def test_tflite_float_model_unchanged_numerically(model):
    before, graph = _run_cleanup(shared_model(model))
    _assert_clean(graph)
    assert "Transpose" not in op_counts(graph)
    assert_same_function(before, graph)


# -- a small NCHW CNN written as ONNX, with every pattern the layout passes must handle ---------

def _initializer(name: str, shape, rng, positive: bool = False) -> TensorProto:
    array = rng.uniform(0.5, 1.5, shape) if positive else rng.standard_normal(shape) * 0.3
    return numpy_helper.from_array(array.astype(np.float32), name)


def _conv_bn_relu(nodes, inits, rng, name: str, x: str, cin: int, cout: int, group: int = 1) -> str:
    inits += [_initializer(f"{name}_w", (cout, cin // group, 3, 3), rng)]
    inits += [_initializer(f"{name}_{p}", (cout,), rng, p == "var") for p in ("g", "b", "m", "var")]
    nodes += [helper.make_node("Conv", [x, f"{name}_w"], [f"{name}_c"], pads=[1, 1, 1, 1], group=group),
              helper.make_node("BatchNormalization", [f"{name}_c", f"{name}_g", f"{name}_b",
                                                      f"{name}_m", f"{name}_var"], [f"{name}_bn"]),
              helper.make_node("Relu", [f"{name}_bn"], [f"{name}_out"])]
    return f"{name}_out"


def small_cnn_onnx(path) -> None:
    """conv-bn-relu, depthwise + skip Add, MaxPool, Resize x2, Concat, GAP, Flatten, Gemm."""
    rng = np.random.default_rng(7)
    nodes, inits = [], []
    a = _conv_bn_relu(nodes, inits, rng, "c1", "x", 3, 8)
    b = _conv_bn_relu(nodes, inits, rng, "c2", a, 8, 8, group=8)
    nodes.append(helper.make_node("Add", [a, b], ["skip"]))
    nodes.append(helper.make_node("MaxPool", ["skip"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"))
    nodes.append(helper.make_node("Resize", ["pooled", "", "scales"], ["up"], mode="nearest"))
    nodes.append(helper.make_node("Concat", ["up", "skip"], ["cat"], axis=1))
    c = _conv_bn_relu(nodes, inits, rng, "c3", "cat", 16, 4)
    nodes.append(helper.make_node("GlobalAveragePool", [c], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    inits += [_initializer("fc_w", (5, 4), rng), _initializer("fc_b", (5,), rng)]
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 5])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # readable by every supported onnxruntime
    onnx.save(model, str(path))


def test_small_cnn_matches_onnxruntime(tmp_path):
    path = tmp_path / "small_cnn.onnx"
    small_cnn_onnx(path)
    before, graph = _run_cleanup(path)
    _assert_clean(graph)
    assert op_counts(graph).get("Transpose", 0) <= 1
    feeds = random_feeds(before)
    assert_same_function(before, graph)
    want = onnxruntime_outputs(path, before, feeds)[0]
    np.testing.assert_allclose(run_float(graph, feeds)["logits"], want, rtol=RTOL, atol=ATOL)


def test_pipelines_are_named_lists():
    assert {"cleanup", "cleanup_nhwc_io"} <= set(PIPELINES)
    names = [p.name for p in PIPELINES["cleanup"]()]
    assert names.index("fold_batchnorm") < names.index("fuse_activation") < names.index("to_nhwc")
    with pytest.raises(UsageError, match="unknown pass pipeline"):
        run_pipeline(Graph("empty"), "no_such_pipeline")
