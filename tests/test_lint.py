"""Deployment lint: every rule fires on a tiny graph built to trigger it (naming the node and
the numbers) and stays silent on a clean graph; severities, ordering, exit codes, JSON."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import REPO, shared_model
from mcudeploy.cli.main import main
from mcudeploy.errors import UsageError
from mcudeploy.ir import DType, Graph, Value, verify
from mcudeploy.lint import RULES, lint_graph
from mcudeploy.report.lint_render import print_report, to_dict
from mcudeploy.targets import load_target

NPU_TARGET = load_target("npu-mcu")      # NPU, alignment 16, input multiple 4, 1 MB SRAM + PSRAM
CPU_TARGET = load_target("stm32h743")    # no NPU
SMALL_TARGET = load_target("stm32f103")  # 20 KB SRAM, no external RAM


class Builder:
    """Tiny int8 NHWC graphs: ``b.conv(x, 32)`` etc., names as given."""

    def __init__(self, dtype: DType = DType.INT8) -> None:
        self.graph = Graph("lint")
        self.dtype = dtype

    def input(self, shape=(1, 16, 16, 16), layout="NHWC", name="x") -> Value:
        return self.graph.add_input(name, self.dtype, shape, layout=layout)

    def conv(self, x: Value, channels: int, kernel: int = 3, name: str = "conv",
             layout: str = "NHWC") -> Value:
        in_channels = x.shape[3] if layout == "NHWC" else x.shape[1]
        shape = ((channels, kernel, kernel, in_channels) if layout == "NHWC"
                 else (channels, in_channels, kernel, kernel))
        weights = self.graph.add_constant(f"{name}_w", np.ones(shape, self.dtype.numpy))
        pad = kernel // 2
        return self.node("Conv", [x, weights], {"layout": layout, "pads": (pad,) * 4}, name)

    def node(self, op: str, inputs, attrs=None, name: str = "n") -> Value:
        return self.graph.add_node(op, inputs, attrs or {}, name=name).outputs[0]

    def batchnorm(self, x: Value, name: str = "bn") -> Value:
        channels = x.shape[3]
        params = [self.graph.add_constant(f"{name}_{p}", np.ones(channels, np.float32))
                  for p in ("scale", "bias", "mean", "var")]
        return self.node("BatchNormalization", [x, *params], {"layout": "NHWC"}, name)

    def finish(self, *outputs: Value) -> Graph:
        self.graph.outputs = list(outputs)
        verify(self.graph)
        return self.graph


def clean_graph() -> Graph:
    """int8 NHWC 16x16 input -> 3x3 conv (32) -> foldable BN -> Relu -> pool -> conv (16)."""
    b = Builder()
    x = b.conv(b.input(), 32, name="conv1")
    x = b.node("Relu", [b.batchnorm(x, "bn1")], name="relu1")
    x = b.node("MaxPool", [x], {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (2, 2)},
               name="pool")
    return b.finish(b.conv(x, 16, name="conv2"))


def findings(graph: Graph, target, rule: str):
    return [f for f in lint_graph(graph, target).findings if f.rule == rule]


@pytest.mark.parametrize("target", [NPU_TARGET, CPU_TARGET], ids=lambda t: t.name)
def test_clean_graph_has_no_findings(target):
    report = lint_graph(clean_graph(), target)
    assert report.findings == []
    assert not report.fails("info")


def test_every_rule_has_a_trigger_test():
    assert set(RULES) == {"unfoldable-batchnorm", "dropout-left-in", "bilinear-resize",
                          "large-kernel-deep", "layout-op-at-boundary", "dynamic-shape",
                          "channel-alignment", "nchw-input", "input-spatial-multiple",
                          "npu-fallback", "tensor-exceeds-sram", "executor"}   # executor: test_executor.py


def test_channel_alignment_after_concat():
    b = Builder()
    x = b.input()
    left, right = b.conv(x, 32, name="left"), b.conv(x, 40, name="right")
    joined = b.node("Concat", [left, right], {"axis": 3}, name="cat")
    graph = b.finish(b.conv(joined, 32, name="after"))
    found = findings(graph, NPU_TARGET, "channel-alignment")
    assert [f.node for f in found] == ["right", "cat"]
    message = found[1].message + found[1].why
    for word in ("72 channels after Concat (32 + 40)", "multiple of 16", "padded to 80", "10%"):
        assert word in message
    assert findings(graph, CPU_TARGET, "channel-alignment") == []


def test_channel_alignment_skips_the_classifier():
    b = Builder()
    x = b.node("Reshape", [b.conv(b.input(), 32)], {"shape": (1, 16 * 16 * 32)}, name="flat")
    weights = b.graph.add_constant("fc_w", np.ones((10, 16 * 16 * 32), np.int8))
    logits = b.node("Gemm", [x, weights], {"transB": 1}, name="fc")
    graph = b.finish(b.node("Softmax", [logits], name="softmax"))
    assert findings(graph, NPU_TARGET, "channel-alignment") == []


@pytest.mark.parametrize("case", ["after-relu", "shared-producer"])
def test_unfoldable_batchnorm(case):
    b = Builder()
    conv = b.conv(b.input(), 32)
    if case == "after-relu":
        graph = b.finish(b.batchnorm(b.node("Relu", [conv], name="relu")))
        words = ["Relu 'relu'", "not from Conv"]
    else:
        graph = b.finish(b.batchnorm(conv), b.node("Relu", [conv], name="relu"))
        words = ["also read by 1 other"]
    found = findings(graph, NPU_TARGET, "unfoldable-batchnorm")
    assert [f.node for f in found] == ["bn"]
    assert all(w in found[0].message for w in words)
    assert "8192 multiply-adds" in found[0].why  # 16 x 16 x 32 elements


def test_dropout_left_in():
    b = Builder()
    graph = b.finish(b.node("Dropout", [b.conv(b.input(), 32)], {"ratio": 0.2}, name="drop"))
    found = findings(graph, CPU_TARGET, "dropout-left-in")
    assert [(f.node, f.severity) for f in found] == [("drop", "warning")]
    assert "ratio 0.2" in found[0].message


@pytest.mark.parametrize("mode, sizes, flagged", [
    ("linear", (1, 32, 32, 16), True),    # 2x upscale
    ("linear", (1, 24, 24, 16), False),   # 1.5x: nearest would not do
    ("nearest", (1, 32, 32, 16), False),
])
def test_bilinear_resize(mode, sizes, flagged):
    b = Builder()
    graph = b.finish(b.node("Resize", [b.input()], {"sizes": sizes, "mode": mode}, name="up"))
    found = findings(graph, CPU_TARGET, "bilinear-resize")
    assert [f.node for f in found] == (["up"] if flagged else [])
    if flagged:
        assert "(2x2)" in found[0].message and "65536 MACC" in found[0].why  # 32*32*16 * 4


def test_large_kernel_deep_but_not_first():
    b = Builder()
    x = b.conv(b.input(), 16, kernel=7, name="stem")
    graph = b.finish(b.conv(x, 16, kernel=5, name="deep"))
    found = findings(graph, CPU_TARGET, "large-kernel-deep")
    assert [(f.node, f.severity) for f in found] == [("deep", "info")]
    assert "5x5" in found[0].message and "2.8x" in found[0].why


@pytest.mark.parametrize("op, attrs, after_resize, severity", [
    ("Transpose", {"perm": (0, 3, 1, 2)}, False, "warning"),
    ("Reshape", {"shape": (1, 256, 16)}, False, "info"),
    ("Transpose", {"perm": (0, 3, 1, 2)}, True, "warning"),
])
def test_layout_op_at_boundary(op, attrs, after_resize, severity):
    b = Builder()
    x = b.input()
    if after_resize:
        x = b.node("Resize", [x], {"sizes": (1, 32, 32, 16)}, name="up")
    graph = b.finish(b.node(op, [x], attrs, name="move"))
    found = findings(graph, CPU_TARGET, "layout-op-at-boundary")
    assert [(f.node, f.severity) for f in found] == [("move", severity)]
    assert ("'up'" if after_resize else "model input 'x'") in found[0].message


@pytest.mark.parametrize("after_resize", [False, True])
def test_layout_op_fix_names_only_what_the_model_has(after_resize):
    b = Builder()
    x = b.input()
    if after_resize:
        x = b.node("Resize", [x], {"sizes": (1, 32, 32, 16)}, name="up")
    graph = b.finish(b.node("Transpose", [x], {"perm": (0, 3, 1, 2)}, name="move"))
    fix = findings(graph, CPU_TARGET, "layout-op-at-boundary")[0].fix
    assert ("upsample" in fix) == after_resize


def test_layout_op_inserted_by_mcudeploy_is_not_flagged():
    """The NHWC conversion's own input Transpose is not in the model as imported: the model's
    NCHW input is the finding (nchw-input), not the Transpose mcudeploy added for it."""
    b = Builder()
    graph = b.finish(b.node("Transpose", [b.input()], {"perm": (0, 3, 1, 2)}, name="x_nhwc_transpose"))
    source = Builder()
    imported = source.finish(source.node("Relu", [source.input()], name="relu"))
    found = [f for f in lint_graph(graph, CPU_TARGET, source=imported).findings
             if f.rule == "layout-op-at-boundary"]
    assert found == []
    assert findings(graph, CPU_TARGET, "layout-op-at-boundary")   # the same op in the model: flagged


def test_layout_op_deeper_is_not_flagged():
    b = Builder()
    graph = b.finish(b.node("Transpose", [b.conv(b.input(), 32)], {"perm": (0, 3, 1, 2)}, name="t"))
    assert findings(graph, CPU_TARGET, "layout-op-at-boundary") == []


def test_dynamic_shape_from_importer_metadata():
    graph = clean_graph()
    graph.metadata["dynamic_dimensions"] = [
        {"input": "x", "axis": 0, "symbol": "batch", "value": 1},
        {"input": "x", "axis": 2, "symbol": "width", "value": 96}]
    found = findings(graph, CPU_TARGET, "dynamic-shape")
    by_severity = {f.severity: f for f in found}       # batch of 1 is only worth knowing
    assert sorted(by_severity) == ["info", "warning"] and len(found) == 2
    assert by_severity["info"].node is None
    assert "input 'x' dimension 0 (batch) fixed to 1" in by_severity["info"].message
    assert "input 'x' dimension 2 (width) fixed to 96" in by_severity["warning"].message


def test_dynamic_dimensions_recorded_by_both_importers(tmp_path):
    from conftest import shared_model
    from mcudeploy.importers import load_model
    tflite = load_model(shared_model("mlperf_tiny/resnet8_int8.tflite"))
    assert tflite.metadata["dynamic_dimensions"] == [
        {"input": "input_1_int8", "axis": 0, "symbol": None, "value": 1}]
    onnx_graph = load_model(shared_model("onnx/mobilenetv2_0.5_128.onnx"))
    assert all(entry["axis"] == 0 for entry in onnx_graph.metadata["dynamic_dimensions"])


def test_nchw_input_on_nhwc_target():
    b = Builder(DType.FLOAT32)
    x = b.input((1, 3, 16, 16), layout=None)
    graph = b.finish(b.conv(x, 16, layout="NCHW"))
    found = findings(graph, CPU_TARGET, "nchw-input")
    assert [f.node for f in found] == ["x"]
    assert "float32[1,3,16,16]" in found[0].message and "3072 bytes" in found[0].why


def test_input_spatial_multiple():
    b = Builder()
    graph = b.finish(b.conv(b.input((1, 18, 18, 16)), 32))
    found = findings(graph, NPU_TARGET, "input-spatial-multiple")
    assert [f.node for f in found] == ["x"]
    assert "18x18" in found[0].message and "20x20" in found[0].fix
    assert findings(graph, CPU_TARGET, "input-spatial-multiple") == []  # no such requirement


def test_npu_fallback_per_node_and_float_summary():
    b = Builder()
    x = b.node("Softmax", [b.conv(b.input(), 32, name="conv1")], {"axis": -1}, name="soft")
    graph = b.finish(b.conv(x, 32, name="conv2"))
    found = findings(graph, NPU_TARGET, "npu-fallback")
    assert [(f.node, f.severity) for f in found] == [("soft", "warning")]
    assert "has no Softmax" in found[0].message and "8192 MACC" in found[0].why
    float_graph = Builder(DType.FLOAT32)
    float_graph = float_graph.finish(float_graph.conv(float_graph.input(), 32))
    summary = findings(float_graph, NPU_TARGET, "npu-fallback")
    assert len(summary) == 1 and summary[0].node is None
    assert "1 of 1 nodes" in summary[0].message and "float ops left" in summary[0].message
    assert findings(graph, CPU_TARGET, "npu-fallback") == []


def test_forced_cpu_node_is_info():
    report = lint_graph(clean_graph(), NPU_TARGET, force_cpu=["conv2"])
    assert [(f.rule, f.node, f.severity) for f in report.findings] == [
        ("npu-fallback", "conv2", "info")]


def test_tensor_exceeds_sram_error_without_external_ram():
    b = Builder()
    graph = b.finish(b.conv(b.input((1, 64, 64, 16)), 16))  # 65536-byte tensors, 20 KB SRAM
    report = lint_graph(graph, SMALL_TARGET)
    found = [f for f in report.findings if f.rule == "tensor-exceeds-sram"]
    assert {f.severity for f in found} == {"error"} and len(found) == 2
    assert "65536 bytes" in found[0].message and "45056 more than SRAM" in found[0].message
    assert report.fails("error")


def test_float_tensor_is_judged_at_its_int8_size():
    """A float model is deployed after int8 quantization: a float32 tensor 4x the SRAM that
    fits as int8 is no error (lint of a float model with default options exits 0)."""
    b = Builder(DType.FLOAT32)
    graph = b.finish(b.conv(b.input((1, 32, 32, 16)), 16))   # 65536 B float32, 16384 B as int8
    assert lint_graph(graph, SMALL_TARGET).findings == []
    b = Builder(DType.FLOAT32)
    graph = b.finish(b.conv(b.input((1, 64, 64, 16)), 16))   # 65536 B even as int8
    found = findings(graph, SMALL_TARGET, "tensor-exceeds-sram")
    assert found and found[0].severity == "error"
    assert "65536 bytes as int8 after quantization (262144 bytes as float32 now)" in found[0].message


def test_tensor_exceeds_sram_warning_with_psram():
    b = Builder()
    graph = b.finish(b.conv(b.input((1, 256, 256, 32)), 32))  # 2 MiB > 1 MiB SRAM
    found = findings(graph, NPU_TARGET, "tensor-exceeds-sram")
    assert {f.severity for f in found} == {"warning"}
    assert "PSRAM (400 MB/s)" in found[0].why


def test_findings_sorted_by_severity_then_graph_order():
    b = Builder()
    x = b.node("Dropout", [b.conv(b.input((1, 64, 64, 16)), 16, name="c1")], name="drop")
    graph = b.finish(b.conv(x, 16, kernel=5, name="c2"))
    severities = [f.severity for f in lint_graph(graph, SMALL_TARGET).findings]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


def test_unknown_rule_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown lint rule"):
        lint_graph(clean_graph(), CPU_TARGET, rules=["no-such-rule"])


def test_json_and_table_rendering(capsys):
    report = lint_graph(clean_graph(), NPU_TARGET, force_cpu=["conv2"])
    data = to_dict(report)
    # bn1 stays on the CPU: npu-mcu has no BatchNormalization (the cleanup pipeline folds it)
    assert data["offload"]["nodes"] == 5 and data["offload"]["npu_nodes"] == 3
    assert data["counts"] == {"error": 0, "warning": 0, "info": 1}
    print_report(report)
    assert "conv2" in capsys.readouterr().out


def test_cli_exit_codes(capsys):
    model = str(REPO / "examples" / "kws_cnn.onnx")
    assert main(["lint", model, "--target", "stm32n6", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["target"] == "stm32n6" and data["counts"]["warning"] >= 1
    assert main(["lint", model, "--target", "stm32n6", "--fail-on", "warning"]) == 1
    assert main(["lint", model, "--target", "nope"]) == 2
    assert "unknown target 'nope'" in capsys.readouterr().err
    assert main(["lint", model, "--target", "stm32n6", "--cpu", "ghost"]) == 2


@pytest.mark.parametrize("relative, target, min_node_rate", [
    ("mlperf_tiny/resnet8_int8.tflite", "stm32n6", 0.9),
    ("tflite_micro/person_detect_int8.tflite", "stm32n6", 0.9),
])
def test_real_int8_models_mostly_on_the_npu(relative, target, min_node_rate):
    from mcudeploy.importers import load_model
    graph = load_model(shared_model(relative))
    report = lint_graph(graph, load_target(target))
    assert report.mapping.node_rate >= min_node_rate
    assert report.mapping.macc_rate == pytest.approx(1.0, abs=1e-3)
    assert not report.fails("error")
