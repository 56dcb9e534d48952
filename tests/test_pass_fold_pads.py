"""FoldPads: a zero constant Pad merges into the Conv that reads it; everything else stays.
Equivalence is checked in float (run_float) and bit-exactly in int8 (run_int)."""
from __future__ import annotations

import numpy as np
import pytest

from _pass_helpers import apply, assert_same_function, op_counts
from mcudeploy.ir import DType, Graph, QuantParams
from mcudeploy.passes.fold_pads import FoldPads
from mcudeploy.reference import run_int


def pad_conv(pads, *, value=0.0, mode="constant", second_reader=False, layout="NHWC") -> Graph:
    rng = np.random.default_rng(3)
    graph = Graph("pad_conv")
    shape = (1, 6, 6, 3) if layout == "NHWC" else (1, 3, 6, 6)
    x = graph.add_input("x", DType.FLOAT32, shape)
    padded = graph.add_node("Pad", [x], {"pads": pads, "value": value, "mode": mode},
                            name="pad").outputs[0]
    w_shape = (4, 3, 3, 3)
    w = graph.add_constant("w", rng.standard_normal(w_shape).astype(np.float32))
    conv = graph.add_node("Conv", [padded, w], {"layout": layout, "pads": (1, 0, 0, 1)}, name="conv")
    graph.outputs = [conv.outputs[0]]
    if second_reader:
        graph.outputs.append(graph.add_node("Relu", [padded], name="relu").outputs[0])
    return graph


@pytest.mark.parametrize("layout,pads,expected", [
    ("NHWC", (0, 1, 2, 0, 0, 3, 0, 0), (2, 2, 3, 1)),      # H: 1 / 3, W: 2 / 0 added to (1,0,0,1)
    ("NCHW", (0, 0, 1, 2, 0, 0, 3, 0), (2, 2, 3, 1)),
])
def test_zero_pad_folds_into_conv(layout, pads, expected):
    graph = pad_conv(pads, layout=layout)
    before, changed = apply(graph, FoldPads())
    assert changed == ["fold_pads"] and op_counts(graph) == {"Conv": 1}
    assert graph.node("conv").attrs["pads"] == expected
    assert_same_function(before, graph)


@pytest.mark.parametrize("kwargs,reason", [
    ({"value": 1.0}, "value"), ({"mode": "edge"}, "mode"),
    ({"second_reader": True}, "two readers"),
])
def test_other_pads_stay(kwargs, reason):
    graph = pad_conv((0, 1, 1, 0, 0, 1, 1, 0), **kwargs)
    _, changed = apply(graph, FoldPads())
    assert changed == [] and "Pad" in op_counts(graph), reason


def test_channel_pad_stays():
    graph = pad_conv((0, 0, 0, 0, 0, 0, 0, 0))
    graph.node("pad").attrs["pads"] = (0, 0, 0, 1, 0, 0, 0, 0)   # would pad channels
    assert FoldPads().run(graph) is False


def test_int8_fold_is_bit_exact():
    """A quantized Pad pads with the zero point; the folded Conv skips those taps: equal bytes."""
    rng = np.random.default_rng(4)
    q_in = QuantParams(np.float32(0.05), -7)
    graph = Graph("q")
    x = graph.add_input("x", DType.INT8, (1, 5, 5, 2), quant=q_in)
    pad = graph.add_node("Pad", [x], {"pads": (0, 1, 1, 0, 0, 1, 0, 0)}, name="pad")
    pad.outputs[0].quant = q_in
    w = graph.add_constant("w", rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8),
                           quant=QuantParams(np.full(3, 0.02, np.float32), 0, axis=0))
    b = graph.add_constant("b", rng.integers(-500, 500, 3).astype(np.int32),
                           quant=QuantParams(np.full(3, 0.001, np.float32), 0, axis=0))
    conv = graph.add_node("Conv", [pad.outputs[0], w, b], {"layout": "NHWC"}, name="conv")
    conv.outputs[0].quant = QuantParams(np.float32(0.1), 3)
    graph.outputs = [conv.outputs[0]]
    feeds = {"x": rng.integers(-128, 128, (1, 5, 5, 2)).astype(np.int8)}
    expected = run_int(graph, feeds)["conv"]
    assert FoldPads().run(graph) and op_counts(graph) == {"Conv": 1}
    assert run_int(graph, feeds)["conv"].tobytes() == expected.tobytes()


def test_requantizing_pad_stays():
    graph = pad_conv((0, 1, 1, 0, 0, 1, 1, 0))
    graph.node("pad").inputs[0].quant = QuantParams(np.float32(0.1), 0)
    graph.node("pad").outputs[0].quant = QuantParams(np.float32(0.2), 0)
    assert FoldPads().run(graph) is False
