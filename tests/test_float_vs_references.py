"""Whole float models: ``run_float`` on the imported graph against the model's own runtime.

Every float model in the shared folder is imported with ``load_model`` and run on several
seeded random inputs; the outputs must match onnxruntime (ONNX) or LiteRT with its
reference kernels (TFLite) to ``|ours - theirs| <= 1e-5 + 1e-4 * |theirs|``. The same holds
after the default cleanup pass pipeline, when :mod:`mcudeploy.passes.pipelines` exists.
The max absolute and relative differences per model are logged (``-o log_cli=true``).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.importers import load_model
from mcudeploy.ir import Graph
from mcudeploy.reference import run_float

log = logging.getLogger(__name__)
RTOL, ATOL = 1e-4, 1e-5
SEEDS = (0, 1, 2)
MODELS = ["mlperf_tiny/resnet8_float.tflite", "mlperf_tiny/mobilenetv1_vww_float.tflite",
          "mlperf_tiny/fc_autoencoder_float.tflite", "tflite_micro/hello_world_float.tflite",
          "onnx/mobilenetv2_0.5_128.onnx"]


class OnnxRuntimeReference:
    def __init__(self, path) -> None:
        import onnxruntime
        self.session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        names = [i.name for i in self.session.get_inputs()]
        return self.session.run(None, dict(zip(names, inputs)))


class LiteRtReference:
    def __init__(self, path) -> None:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        self.interpreter = Interpreter(
            model_path=str(path),
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        self.interpreter.allocate_tensors()

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for detail, array in zip(self.interpreter.get_input_details(), inputs):
            self.interpreter.set_tensor(detail["index"], array)
        self.interpreter.invoke()
        return [self.interpreter.get_tensor(d["index"]).copy()
                for d in self.interpreter.get_output_details()]


def _reference(path):
    return OnnxRuntimeReference(path) if path.suffix == ".onnx" else LiteRtReference(path)


def _random_inputs(graph: Graph, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, value.shape).astype(value.dtype.numpy) for value in graph.inputs]


def _differences(graph: Graph, reference, seeds=SEEDS) -> tuple[float, float]:
    """Max abs and max relative difference over ``seeds``; asserts the tolerance."""
    worst_abs = worst_rel = 0.0
    for seed in seeds:
        inputs = _random_inputs(graph, seed)
        ours = run_float(graph, {v.name: a for v, a in zip(graph.inputs, inputs)})
        theirs = reference(inputs)
        assert len(theirs) == len(graph.outputs)
        for value, expected in zip(graph.outputs, theirs):
            actual = ours[value.name]
            assert actual.shape == expected.shape, (value.name, actual.shape, expected.shape)
            np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=value.name)
            difference = np.abs(actual.astype(np.float64) - expected)
            worst_abs = max(worst_abs, float(difference.max()))
            worst_rel = max(worst_rel, float((difference / np.maximum(np.abs(expected), 1e-30)).max()))
    return worst_abs, worst_rel


@pytest.mark.parametrize("relative", MODELS)
def test_imported_model_matches_runtime(relative):
    path = shared_model(relative)
    graph = load_model(path)
    worst_abs, worst_rel = _differences(graph, _reference(path))
    log.info("%s: max abs diff %.3g, max rel diff %.3g", relative, worst_abs, worst_rel)


def _cleanup_pipeline():
    from mcudeploy.passes.pipelines import cleanup
    return cleanup()


@pytest.mark.parametrize("relative", MODELS)
def test_model_after_cleanup_passes_matches_runtime(relative):
    from mcudeploy.passes import run_passes
    passes = _cleanup_pipeline()
    path = shared_model(relative)
    graph = load_model(path)
    run_passes(graph, passes)
    worst_abs, worst_rel = _differences(graph, _reference(path), seeds=SEEDS[:1])
    log.info("%s after cleanup: %d nodes, max abs diff %.3g, max rel diff %.3g",
             relative, len(graph.nodes), worst_abs, worst_rel)
