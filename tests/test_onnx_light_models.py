"""The nine "light" ONNX model-zoo topologies of onnx's own backend test data (AlexNet,
DenseNet-121, Inception v1 / v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512):
analyze, then the float executor against onnxruntime.

The light models replace every weight by ``ConstantOfShape(0.02)``, which makes all logits
equal and the softmax uniform, so agreement would prove little. Each weight is therefore
multiplied by a seeded random factor per output channel / FC row (``U(0.5, 1.5)``; signs
kept, so batch-norm variances stay positive; the importer folds the product), and the
logits (the input of the final Softmax) are compared besides the outputs: within 1e-4 of
onnxruntime, relative to the largest value (VGG-19's logits grow to ~1e30; float32
accumulation order alone moves them by ~1e-7 of that).
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import require
from mcudeploy.importers import load_model
from mcudeploy.ir import verify
from mcudeploy.reference import run_float
from mcudeploy.report.analysis import analyze_graph

ort = require("onnxruntime")

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
          "shufflenet", "squeezenet", "vgg19", "zfnet512"]
RELATIVE = 1e-4


def randomized(path: Path, seed: int) -> tuple[onnx.ModelProto, str | None]:
    """The model with every ``W = ConstantOfShape(shape, v)`` weight varied per leading index
    (``W * R``, ``R`` random ``U(0.5, 1.5)`` of shape ``[shape[0], 1, ...]``: per output
    channel or FC row; R is also a graph input, as IR version 3 requires), and the logits
    (the final Softmax's input, if any) as an extra output. The file stays small."""
    model = onnx.load(path)
    shapes = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        if node.op_type != "ConstantOfShape":
            continue
        shape = [int(d) for d in shapes[node.input[0]]]
        weight, factor = node.output[0], f"{node.output[0]}/factor"
        node.output[0] = f"{weight}/uniform"
        array = rng.uniform(0.5, 1.5, [shape[0]] + [1] * (len(shape) - 1)).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(array, factor))
        model.graph.input.append(onnx.helper.make_tensor_value_info(
            factor, onnx.TensorProto.FLOAT, array.shape))
        nodes.append(onnx.helper.make_node("Mul", [node.output[0], factor], [weight]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    softmax = [node for node in nodes if node.op_type == "Softmax"]
    logits = softmax[-1].input[0] if softmax else None
    if logits is not None:
        model.graph.output.append(onnx.helper.make_tensor_value_info(
            logits, onnx.TensorProto.FLOAT, None))
    return model, logits


@pytest.fixture(autouse=True)
def quiet():
    logging.disable(logging.WARNING)  # opset-9 upgrade notes
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_light_model_analyzes_and_matches_onnxruntime(name, tmp_path):
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is not in this onnx package")
    original = load_model(path)  # the file as shipped imports (its weights fold to constants)
    analysis = analyze_graph(original)
    assert len(analysis.layers) == len(original.nodes) and analysis.total_macc > 10**8
    assert sum(layer.macc for layer in analysis.layers) == analysis.total_macc

    model_path = tmp_path / path.name
    model, logits = randomized(path, seed=len(name))
    onnx.save(model, model_path)
    graph = load_model(model_path)
    verify(graph)
    assert [n.op for n in graph.nodes] == [n.op for n in original.nodes]  # weights folded
    x = np.random.default_rng(0).standard_normal(graph.inputs[0].shape).astype(np.float32)
    ours = run_float(graph, {graph.inputs[0].name: x})
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    theirs = session.run(None, {session.get_inputs()[0].name: x})
    assert len(theirs) == len(graph.outputs) == 1 + (logits is not None)
    for value, reference in zip(graph.outputs, theirs):
        actual = ours[value.name]
        assert actual.shape == reference.shape and np.isfinite(actual).all()
        error = np.abs(actual.astype(np.float64) - reference).max() / np.abs(reference).max()
        assert error <= RELATIVE, f"{value.name}: {error:.3g} of the largest |value|"
