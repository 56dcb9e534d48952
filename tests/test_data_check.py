"""``mcudeploy data check``: keys, layout, dtype, range and clipping of a data file against a
model's inputs, and the layout hint the data readers give every command (run, validate,
quantize) on NHWC data for an NCHW input."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import shared_model
from mcudeploy.cli.main import main
from mcudeploy.data_files import check_array
from mcudeploy.data_report import check_data
from mcudeploy.driver import load_graph
from mcudeploy.errors import DataError
from mcudeploy.ir import DType, Graph

MOBILENET = "onnx/mobilenetv2_0.5_128.onnx"     # float, NCHW input 'input_1:0' [1,3,128,128]
RESNET8 = "mlperf_tiny/resnet8_int8.tflite"     # int8 NHWC input


def nchw_graph() -> Graph:
    graph = Graph("g")
    x = graph.add_input("x", DType.FLOAT32, (1, 3, 8, 6))
    w = graph.add_constant("w", np.ones((4, 3, 1, 1), np.float32))
    graph.outputs = [graph.add_node("Conv", [x, w], {"layout": "NCHW"}, name="c").outputs[0]]
    return graph


def report_for(graph, array):
    reports, problems = check_data(graph, {graph.inputs[0].name: array})
    return reports[0], problems


def test_nhwc_data_for_nchw_input_names_the_transpose():
    report, _ = report_for(nchw_graph(), np.zeros((5, 8, 6, 3), np.float32))
    assert report.layout.startswith("looks like NHWC")
    assert "np.transpose(x, (0, 3, 1, 2))" in report.problems[0]
    with pytest.raises(DataError, match="looks like NHWC data for an NCHW input"):
        check_array(np.zeros((5, 8, 6, 3), np.float32), nchw_graph().inputs[0], "d.npz")


def test_matching_data_has_no_problem_and_names_its_range():
    data = np.random.default_rng(0).uniform(0, 255, (2, 3, 8, 6)).astype(np.float32)
    report, problems = report_for(nchw_graph(), data)
    assert report.problems == [] and problems == [] and report.samples == 2
    assert report.looks_like.startswith("raw 8-bit pixels")
    report, _ = report_for(nchw_graph(), data / 255)
    assert report.looks_like == "scaled to [0, 1]"
    report, _ = report_for(nchw_graph(), data / 127.5 - 1)
    assert report.looks_like == "scaled to [-1, 1]"


def test_wrong_shape_and_unknown_key_and_nan_are_problems():
    graph = nchw_graph()
    report, _ = report_for(graph, np.zeros((2, 3, 8, 7), np.float32))
    assert report.layout == "does not match" and report.problems
    reports, problems = check_data(graph, {"x": np.zeros((1, 3, 8, 6), np.float32),
                                           "extra": np.zeros(3)})
    assert reports[0].problems == [] and "'extra'" in problems[0]
    nan = np.zeros((1, 3, 8, 6), np.float32)
    nan[0, 0, 0, 0] = np.nan
    assert "NaN" in report_for(graph, nan)[0].problems[0]


def test_int8_input_with_float_data_says_how_to_quantize():
    graph = load_graph(shared_model(RESNET8), pipeline="none")
    value = graph.inputs[0]
    report, _ = report_for(graph, np.zeros((1, *value.shape[1:]), np.float32))
    assert "quantize it first: np.clip(np.round(x / " in report.problems[0]
    assert f"{int(value.quant.zero_point[0])}, -128, 127).astype(np.int8)" in report.problems[0]


def test_cli_exit_codes_and_report(tmp_path, capsys):
    model = shared_model(MOBILENET)
    rng = np.random.default_rng(1)
    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    np.savez(good, **{"input_1:0": rng.uniform(0, 1, (2, 3, 128, 128)).astype(np.float32)})
    np.savez(bad, **{"input_1:0": rng.uniform(0, 1, (2, 128, 128, 3)).astype(np.float32)})
    assert main(["data", "check", str(good), "--model", str(model)]) == 0
    out = capsys.readouterr().out
    assert "'input_1:0'" in out and "matches the model" in out and "preprocessing:" in out
    assert main(["data", "check", str(bad), "--model", str(model)]) == DataError.exit_code
    captured = capsys.readouterr()
    assert "looks like NHWC" in captured.out
    assert captured.err.startswith("mcudeploy: error:") and "np.transpose" in captured.err


def test_raw_pixels_for_a_model_that_scales_its_input_are_named_so():
    graph = Graph("g")
    x = graph.add_input("x", DType.FLOAT32, (1, 8, 6, 3))
    scale = graph.add_constant("s", np.array(1 / 255, np.float32))
    scaled = graph.add_node("Mul", [x, scale], {}, name="rescaling").outputs[0]
    w = graph.add_constant("w", np.ones((4, 1, 1, 3), np.float32))
    graph.outputs = [graph.add_node("Conv", [scaled, w], {"layout": "NHWC"}, name="c").outputs[0]]
    data = np.random.default_rng(0).uniform(0, 255, (2, 8, 6, 3)).astype(np.float32)
    report, _ = report_for(graph, data)
    assert "which the model scales itself" in report.looks_like and "0.00392157" in report.looks_like
    assert "scales itself" not in report_for(nchw_graph(), data.transpose(0, 3, 1, 2))[0].looks_like


def test_raw_pixels_are_named_as_expected_when_the_quantized_input_holds_them():
    """A float model cannot say whether 0..255 is right (both are said); a quantized input
    calibrated on raw pixels (ResNet-8's int8 twin: scale 1, zero point -128) can."""
    from mcudeploy.ir import QuantParams
    unknown = report_for(nchw_graph(), np.full((1, 3, 8, 6), 200, np.float32))[0].looks_like
    assert "needs them scaled" in unknown and "takes them as they are" in unknown
    for scale, expected in ((1.0, True), (1 / 255, False)):
        graph = Graph("q")
        x = graph.add_input("x", DType.FLOAT32, (1, 8, 6, 3))
        q = graph.add_node("QuantizeLinear", [x], {"to": "int8"}, name="q").outputs[0]
        q.quant = QuantParams(np.array([scale], np.float32), np.array([-128], np.int64))
        graph.outputs = [q]
        report = report_for(graph, np.random.default_rng(1).uniform(0, 255, (2, 8, 6, 3)).astype(np.float32))[0]
        assert ("as the model's quantized input expects" in report.looks_like) is expected, report.looks_like
        assert (report.clipped_share > 0.5) is not expected
