"""``quantize`` with integer graph inputs and outputs (``--int8-io``, ``int8_io=True``): the
library call and the command finish (they ended in ``ValueError: Invalid integer data type
'f'`` when the report fed float samples to the integer input), the report measures the
model as the float-I/O form does, and the integer form computes exactly the integers the
float-I/O form computes between its entry QuantizeLinear and exit DequantizeLinear."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcudeploy.cli.main import main
from mcudeploy.ir import DType
from mcudeploy.quantize.quantizer import QuantizationConfig, quantize_model
from mcudeploy.quantize.simulate import integer_feeds, run_quantized, stack_samples
from test_quantize_apply import samples, small_cnn

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kws_cnn.onnx"


@pytest.fixture(scope="module")
def outcomes():
    graph = small_cnn()
    data = samples(graph, 12)
    config = QuantizationConfig(progress=False, evaluation_samples=6)
    return (data, quantize_model(graph, data, config),
            quantize_model(graph, data, QuantizationConfig(progress=False, evaluation_samples=6, int8_io=True)))


def test_integer_io_graph_has_int8_input_and_output(outcomes):
    _, float_io, int_io = outcomes
    assert int_io.graph.inputs[0].dtype == DType.INT8 and int_io.graph.outputs[0].dtype == DType.INT8
    assert float_io.graph.inputs[0].dtype == DType.FLOAT32
    assert not any(n.op == "QuantizeLinear" and n.inputs[0] is int_io.graph.inputs[0]
                   for n in int_io.graph.nodes)


def test_report_measures_the_same_model_as_float_io(outcomes):
    _, float_io, int_io = outcomes
    assert int_io.report.output_cosine > 0.99
    assert int_io.report.output_cosine == pytest.approx(float_io.report.output_cosine, abs=1e-6)
    assert int_io.report.output_sqnr_db == pytest.approx(float_io.report.output_sqnr_db, abs=1e-3)


def test_integer_form_computes_the_float_io_forms_integers(outcomes):
    data, float_io, int_io = outcomes
    feeds = stack_samples(data)
    quantized_input = integer_feeds(int_io.graph, feeds)["x"]
    assert quantized_input.dtype == np.int8 and int(quantized_input.max()) - int(quantized_input.min()) > 100
    integer = run_quantized(int_io.graph, feeds)["probs"]
    captured = run_quantized(float_io.graph, feeds, capture=True)
    assert integer.dtype == np.int8
    np.testing.assert_array_equal(integer, captured["probs_int8"])


@pytest.mark.parametrize("extra", [[], ["--auto-mixed"]])
def test_cli_int8_io_on_the_bundled_example(tmp_path, capsys, extra):
    calibration = tmp_path / "calib.npz"
    rng = np.random.default_rng(0)
    np.savez(calibration, input=rng.normal(0, 1, (6, 1, 1, 49, 10)).astype(np.float32))
    code = main(["quantize", str(EXAMPLE), "--calib", str(calibration), "--int8-io",
                 "-o", str(tmp_path / "q.onnx"), *extra])
    assert code == 0 and (tmp_path / "q.onnx").is_file()
    assert "output SQNR" in capsys.readouterr().out
