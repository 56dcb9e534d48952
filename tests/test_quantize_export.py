"""ONNX QDQ export of quantized graphs, and the way back (ONNX QDQ -> quantized IR).

Tolerance between our integer executor and onnxruntime on the same QDQ model: they agree
to within one quantization step of the output for most elements, not bit for bit. The
integer reference follows TFLite (fixed-point multipliers ``m * 2^-s`` with double rounding,
round-half-away QuantizeLinear, TFLite's Softmax / Add arithmetic); onnxruntime, with its
graph optimizations off (see ``_session``), runs each op in float between DQ and Q as the
ONNX spec defines. A rounding difference on one layer moves an element by one step there
and may move its consumers by a step too, so the test allows 1 step for 90 % of the output
elements and 3 steps for all.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from mcudeploy.errors import UsageError
from mcudeploy.exporters.onnx_qdq import export_onnx_qdq, to_onnx_model
from mcudeploy.importers import load_model
from mcudeploy.ir import DType
from mcudeploy.passes.qdq_to_quantized import qdq_to_quantized
from mcudeploy.quantize.apply import QuantizeOptions
from mcudeploy.quantize.simulate import run_quantized
from mcudeploy.reference.int_executor import run_int
from test_quantize_apply import quantized, samples, small_cnn


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    """onnxruntime running the QDQ model as the ONNX spec defines it (DQ -> float op -> Q).

    Graph optimizations are off: with them on, onnxruntime fuses QDQ groups into its own
    integer kernels (QLinearConv, QGemm, QLinearSoftmax ...), whose rounding drifts up to 9
    output steps from the spec on some draws of this small network (seeds 1, 2, 5 of
    ``small_cnn``), while the spec reading and our integer reference stay within one step."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _within_steps(expected: np.ndarray, got: np.ndarray, step: float) -> None:
    steps = np.abs(expected - got) / step
    assert np.mean(steps <= 1.0 + 1e-6) >= 0.9, steps.max()
    assert steps.max() <= 3.0 + 1e-6


@pytest.fixture(scope="module")
def cnn():
    return quantized(small_cnn())


def test_export_passes_checker_and_keeps_io_names(cnn):
    _, result = cnn
    model = to_onnx_model(result.graph)   # runs onnx.checker (full_check) itself
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["x"]
    assert [o.name for o in model.graph.output] == ["probs"]
    ops = {node.op_type for node in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear", "Conv", "Gemm", "Softmax"} <= ops
    int8_weights = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert len(int8_weights) >= 3


def test_onnxruntime_agrees_with_the_integer_reference(cnn):
    prepared, result = cnn
    session = _session(to_onnx_model(result.graph))
    step = float(result.graph.outputs[0].producer.inputs[0].quant.scale[0])
    pairs = [(run_int(result.graph, feeds)["probs"], session.run(None, feeds)[0])
             for feeds in samples(prepared, 8, seed=11)]
    # pooled over the samples: one sample has only 5 outputs, so "90 % of the elements" per
    # sample would mean all of them
    _within_steps(np.concatenate([a.ravel() for a, _ in pairs]),
                  np.concatenate([b.ravel() for _, b in pairs]), step)


def test_int16_and_float_nodes_export_and_run(cnn):
    prepared, result = quantized(small_cnn(), QuantizeOptions(int16=frozenset({"conv2"}),
                                                              keep_float=frozenset({"conv1"})))
    session = _session(to_onnx_model(result.graph))
    feeds = samples(prepared, 1, seed=2)[0]
    ours = run_quantized(result.graph, {"x": feeds["x"][None]})["probs"][0]
    np.testing.assert_allclose(session.run(None, feeds)[0], ours, atol=3 / 256)


def test_export_refuses_a_missing_folder(cnn, tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        export_onnx_qdq(cnn[1].graph, tmp_path / "missing" / "model.onnx")


def test_exported_qdq_converts_back_to_the_same_integer_graph(cnn, tmp_path):
    prepared, result = cnn
    path = export_onnx_qdq(result.graph, tmp_path / "cnn_qdq.onnx")
    back = qdq_to_quantized(load_model(path))
    compute = [n for n in back.nodes if n.op in ("Conv", "Gemm", "Add", "Softmax", "MaxPool")]
    assert compute and all(n.outputs[0].dtype == DType.INT8 for n in compute)
    assert sum(n.op == "DequantizeLinear" for n in back.nodes) == 1
    for feeds in samples(prepared, 4, seed=13):
        np.testing.assert_array_equal(run_int(back, feeds)["probs"], run_int(result.graph, feeds)["probs"])


def test_onnxruntime_quantize_static_model_runs_on_the_integer_reference(tmp_path):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    prepared, result = quantized(small_cnn(), QuantizeOptions(keep_float=frozenset()))
    float_path = export_onnx_qdq(prepared, tmp_path / "float.onnx")  # a float graph exports as is
    data = samples(prepared, 16, seed=21)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter(data)

        def get_next(self):
            return next(self.items, None)

    quantize_static(str(float_path), str(tmp_path / "ort.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    graph = qdq_to_quantized(load_model(tmp_path / "ort.onnx"))
    assert sum(n.op == "Conv" and n.outputs[0].dtype == DType.INT8 for n in graph.nodes) == 2
    # onnxruntime leaves ReduceMean float (DQ -> ReduceMean -> Q): the mixed runner runs it.
    session = _session(onnx.load(str(tmp_path / "ort.onnx")))
    step = 1 / 255   # onnxruntime quantizes Softmax's output to uint8/int8 steps of 1/255
    for feeds in data[:4]:
        ours = run_quantized(graph, {"x": feeds["x"][None]})["probs"][0]
        np.testing.assert_allclose(ours, session.run(None, feeds)[0], atol=3 * step + 1e-6)


def test_whole_16x8_graph_exports_with_int16_qdq_and_matches():
    prepared, result = quantized(small_cnn(), QuantizeOptions(activation_dtype="int16"))
    model = to_onnx_model(result.graph)
    assert any(t.data_type == onnx.TensorProto.INT16 for t in model.graph.initializer)
    session = _session(model)
    for feeds in samples(prepared, 3, seed=17):
        ours = run_quantized(result.graph, {"x": feeds["x"][None]})["probs"][0]
        np.testing.assert_allclose(session.run(None, feeds)[0], ours, atol=1e-3)
