"""NPU / CPU mapping: each "not on the NPU" predicate fires on a tiny graph and names the node
and the number; offload rates by node count and by MACC against hand counts; --cpu forcing;
targets without an NPU."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mcudeploy.errors import UsageError
from mcudeploy.ir import DType, Graph, verify
from mcudeploy.mapping import CPU, NPU, PREDICATES, map_graph
from mcudeploy.targets import Core, MemoryRegion, Npu, Target, load_target

NPU_OPS = frozenset({"Conv", "Add", "Relu", "MaxPool", "Gemm", "Reshape"})


def make_target(**npu_fields) -> Target:
    npu = Npu("test-npu", 1e9, 512, NPU_OPS, frozenset({"int8"}), channel_alignment=16,
              strict_channel_alignment=False, max_kernel=5, max_stride=2, max_dimension=2048)
    return Target("test", Core("Cortex-M55", 400e6, "single", True, "float"),
                  (MemoryRegion("SRAM", 0x2000_0000, 1 << 20),), replace(npu, **npu_fields))


def conv_graph(*, dtype=DType.INT8, channels=32, kernel=3, stride=1, width=16,
               tail: str | None = None) -> Graph:
    """x [1,width,width,16] NHWC -> Conv(kernel, stride, channels) [-> tail op]."""
    graph = Graph("tiny")
    x = graph.add_input("x", dtype, (1, width, width, 16), layout="NHWC")
    weights = graph.add_constant("w", np.ones((channels, kernel, kernel, 16), dtype.numpy))
    pad = kernel // 2
    conv = graph.add_node("Conv", [x, weights], {"layout": "NHWC", "strides": (stride, stride),
                                                 "pads": (pad, pad, pad, pad)}, name="conv")
    out = conv.outputs[0]
    if tail is not None:
        out = graph.add_node(tail, [out], name="tail").outputs[0]
    graph.outputs = [out]
    verify(graph)
    return graph


def test_clean_int8_graph_runs_on_the_npu():
    mapping = map_graph(conv_graph(tail="Relu"), make_target())
    assert [p.device for p in mapping.placements] == [NPU, NPU]
    assert all(not p.reasons for p in mapping.placements)
    assert mapping.node_rate == 1.0 and mapping.macc_rate == 1.0


@pytest.mark.parametrize("graph_args, target_args, code, words", [
    ({"tail": "Softmax"}, {}, "op-unsupported", ["'tail'", "Softmax", "test-npu"]),
    ({"dtype": DType.FLOAT32}, {}, "dtype-unsupported",
     ["'conv'", "a float op left in an int8 graph", "float32"]),
    ({"channels": 72}, {"strict_channel_alignment": True}, "channels-unaligned",
     ["'conv'", "72 channels", "multiple of 16", "8 short of 80"]),
    ({"kernel": 7}, {}, "kernel-too-large", ["'conv'", "7x7", "maximum of 5", "by 2"]),
    ({"stride": 4}, {}, "stride-too-large", ["'conv'", "stride 4x4", "maximum of 2"]),
    ({"width": 4096}, {}, "dimension-too-large",
     ["'conv'", "= 4096", "2048 over", "maximum of 2048"]),
])
def test_each_predicate_fires_with_node_and_number(graph_args, target_args, code, words):
    mapping = map_graph(conv_graph(**graph_args), make_target(**target_args))
    cpu = mapping.on(CPU)
    assert cpu, f"{code} should keep a node off the NPU"
    reasons = [r for p in cpu for r in p.reasons if r.code == code]
    assert len(reasons) == 1
    for word in words:
        assert word in reasons[0].message


def test_every_registered_predicate_is_exercised():
    assert set(PREDICATES) == {"op-unsupported", "dtype-unsupported", "channels-unaligned",
                               "kernel-too-large", "stride-too-large", "dimension-too-large"}


def test_lenient_alignment_does_not_block():
    mapping = map_graph(conv_graph(channels=72), make_target())
    assert mapping.placement("conv").device == NPU


def test_limits_of_zero_mean_no_limit():
    target = make_target(max_kernel=0, max_stride=0, max_dimension=0)
    for args in ({"kernel": 7}, {"stride": 4}, {"width": 4096}):
        assert map_graph(conv_graph(**args), target).placement("conv").device == NPU


def test_all_reasons_are_collected():
    mapping = map_graph(conv_graph(dtype=DType.FLOAT32, kernel=7, stride=4), make_target())
    codes = [r.code for r in mapping.placement("conv").reasons]
    assert codes == ["dtype-unsupported", "kernel-too-large", "stride-too-large"]


def test_offload_rates_by_nodes_and_macc():
    graph = conv_graph(tail="Softmax")   # conv on the NPU, softmax on the CPU
    mapping = map_graph(graph, make_target())
    conv_macc = 16 * 16 * 32 * (16 * 3 * 3)          # outputs x C_in x kH x kW
    softmax_macc = 16 * 16 * 32                        # one per output element
    assert mapping.placement("conv").macc == conv_macc
    assert mapping.placement("tail").macc == softmax_macc
    assert mapping.node_rate == 0.5
    assert mapping.macc_rate == pytest.approx(conv_macc / (conv_macc + softmax_macc))
    assert (mapping.npu_macc, mapping.total_macc) == (conv_macc, conv_macc + softmax_macc)


def test_force_cpu_moves_a_node_and_says_so():
    mapping = map_graph(conv_graph(tail="Relu"), make_target(), force_cpu=["tail"])
    tail = mapping.placement("tail")
    assert tail.device == CPU and tail.forced
    assert "--cpu" in tail.reasons[0].message
    assert mapping.node_rate == 0.5


def test_force_cpu_unknown_node_is_a_usage_error():
    with pytest.raises(UsageError, match="--cpu nope: no such node"):
        map_graph(conv_graph(), make_target(), force_cpu=["nope"])


def test_target_without_npu_maps_everything_to_cpu():
    mapping = map_graph(conv_graph(tail="Relu"), load_target("stm32h743"))
    assert [p.device for p in mapping.placements] == [CPU, CPU]
    for placement in mapping.placements:
        assert [r.code for r in placement.reasons] == ["no-npu"]
        assert "has no NPU" in placement.reasons[0].message
    assert mapping.node_rate == 0.0 and mapping.macc_rate == 0.0


def test_builtin_npu_target_maps_int8_conv_and_refuses_softmax():
    mapping = map_graph(conv_graph(tail="Softmax"), load_target("stm32n6"))
    assert mapping.placement("conv").device == NPU
    assert mapping.placement("tail").device == CPU


def test_empty_graph_rates_are_zero():
    graph = Graph("empty")
    graph.outputs = [graph.add_input("x", DType.INT8, (1, 4))]
    mapping = map_graph(graph, make_target())
    assert (mapping.node_rate, mapping.macc_rate) == (0.0, 0.0)
