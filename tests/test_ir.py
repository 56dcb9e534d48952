"""IR core: building graphs, use-def links, verifier, dump, shape inference and MACC on
hand-computed cases."""
from __future__ import annotations

import numpy as np
import pytest

from mcudeploy.errors import GraphError, UnsupportedError
from mcudeploy.ir import DType, Graph, Node, QuantParams, Value, all_ops, dump, get_op, verify


def small_cnn() -> Graph:
    """input [1,8,8,3] NHWC -> Conv 3x3 (4 ch, pad 1, relu) -> depthwise 3x3 s2 -> Reshape -> Gemm."""
    g = Graph("small")
    x = g.add_input("x", DType.FLOAT32, (1, 8, 8, 3), layout="NHWC")
    w1 = g.add_constant("w1", np.ones((4, 3, 3, 3), np.float32))
    b1 = g.add_constant("b1", np.zeros(4, np.float32))
    conv = g.add_node("Conv", [x, w1, b1], {"layout": "NHWC", "pads": (1, 1, 1, 1),
                                             "activation_min": 0.0}, name="conv1")
    w2 = g.add_constant("w2", np.ones((4, 3, 3, 1), np.float32))
    dw = g.add_node("Conv", [conv.outputs[0], w2], {"layout": "NHWC", "group": 4, "strides": (2, 2),
                                                     "pads": (0, 0, 1, 1)}, name="dw")
    flat = g.add_node("Reshape", [dw.outputs[0]], {"shape": (1, 64)}, name="flat")
    w3 = g.add_constant("w3", np.ones((10, 64), np.float32))
    fc = g.add_node("Gemm", [flat.outputs[0], w3], {"transB": 1}, name="fc")
    g.outputs = [fc.outputs[0]]
    return g


def test_build_links_and_verify():
    g = small_cnn()
    verify(g)
    conv, dw, flat, fc = g.nodes
    assert dw.outputs[0].shape == (1, 4, 4, 4)
    assert fc.outputs[0].shape == (1, 10)
    assert conv.outputs[0].uses == [(dw, 0)]
    assert dw.outputs[0].producer is dw
    assert [v.name for v in g.constants()] == ["w1", "b1", "w2", "w3"]


def test_macc_hand_computed():
    g = small_cnn()
    conv, dw, flat, fc = g.nodes
    assert get_op("Conv").macc(conv) == 8 * 8 * 4 * 3 * 3 * 3      # out elems x C x kh x kw
    assert get_op("Conv").macc(dw) == 4 * 4 * 4 * 3 * 3             # depthwise: C/group = 1
    assert get_op("Reshape").macc(flat) == 0
    assert get_op("Gemm").macc(fc) == 10 * 64


def test_dump_is_stable_and_readable():
    text = dump(small_cnn())
    assert text == dump(small_cnn())
    assert 'conv1: float32[1,8,8,4] = Conv "conv1"(x, w1, b1) {activation_min=0.0, layout=NHWC, pads=[1,1,1,1]}' in text
    assert "  output fc: float32[1,10]" in text


def test_replace_and_remove_keep_uses_consistent():
    g = small_cnn()
    flat = g.node("flat")
    fc = g.node("fc")
    g.replace_all_uses(flat.outputs[0], flat.inputs[0])   # (would be wrong shape: verifier must say so)
    g.remove_node(flat)
    assert fc.inputs[0] is g.node("dw").outputs[0]
    with pytest.raises(GraphError, match="fc.*Gemm"):
        verify(g)


def test_remove_used_node_is_refused():
    g = small_cnn()
    with pytest.raises(GraphError, match="still used"):
        g.remove_node(g.node("conv1"))


def test_copy_is_independent():
    g = small_cnn()
    clone = g.copy()
    verify(clone)
    clone.nodes[0].attrs["pads"] = (0, 0, 0, 0)
    assert g.nodes[0].attrs["pads"] == (1, 1, 1, 1)
    assert dump(g) == dump(small_cnn())


def test_verifier_finds_out_of_order_and_toposort_fixes_it():
    g = small_cnn()
    g.nodes.reverse()
    with pytest.raises(GraphError, match="read before its producer"):
        verify(g)
    g.toposort()
    verify(g)
    assert [n.name for n in g.nodes] == ["conv1", "dw", "flat", "fc"]


def test_cycle_is_reported_by_name():
    g = Graph("cyclic")
    x = g.add_input("x", DType.FLOAT32, (1, 4))
    a = g.add_node("Relu", [x], name="a")
    b = g.add_node("Relu", [a.outputs[0]], name="b")
    a.set_input(0, b.outputs[0])                     # a reads b, b reads a
    g.outputs = [b.outputs[0]]
    with pytest.raises(GraphError, match="cycle through node.*a.*b"):
        g.toposort()
    with pytest.raises(GraphError, match="read before"):
        verify(g)


def test_verifier_finds_dangling_and_wrong_shapes():
    g = Graph("bad")
    x = g.add_input("x", DType.FLOAT32, (1, 4))
    ghost = Value("ghost", DType.FLOAT32, (1, 4))
    add = g.add_node("Add", [x, x], name="add")
    g.nodes.append(Node("Add", "add2", [add.outputs[0], ghost], [Value("y", DType.FLOAT32, (1, 5))]))
    g.outputs = [g.nodes[-1].outputs[0]]
    with pytest.raises(GraphError) as info:
        verify(g)
    message = str(info.value)
    assert "'ghost' is dangling" in message
    assert "output 'y' is float32[1,5], shape inference gives float32[1,4]" in message


@pytest.mark.parametrize("shape", [(1, 0, 4), (1, -3)])
def test_verifier_refuses_non_positive_dimensions(shape):
    g = Graph("dims")
    x = g.add_input("x", DType.FLOAT32, shape)
    g.outputs = [g.add_node("Relu", [x]).outputs[0]]
    with pytest.raises(GraphError, match="non-positive dimension"):
        verify(g)


def test_quantize_output_needs_quant_params():
    g = Graph("q")
    x = g.add_input("x", DType.FLOAT32, (1, 4))
    q = g.add_node("QuantizeLinear", [x], {"to": "int8"})
    g.outputs = [q.outputs[0]]
    with pytest.raises(GraphError, match="no quantization parameters"):
        verify(g)
    q.outputs[0].quant = QuantParams(np.float32(0.1), 3)
    verify(g)


def test_unknown_op_and_attribute_are_refused():
    g = Graph("u")
    x = g.add_input("x", DType.FLOAT32, (1, 4))
    with pytest.raises(UnsupportedError, match="'LpPool' is not an IR op"):
        g.add_node("LpPool", [x])
    with pytest.raises(GraphError, match="unknown attribute.*bogus"):
        g.add_node("Relu", [x], {"bogus": 1})
    with pytest.raises(GraphError, match="missing attribute 'perm'"):
        g.add_node("Transpose", [x])


def test_quant_params_per_channel():
    qp = QuantParams(np.array([0.5, 0.25], np.float32), 0, axis=0)
    assert qp.zero_point.tolist() == [0, 0]
    q = np.array([[2, 4], [4, 8]], np.int8)
    np.testing.assert_array_equal(qp.dequantize(q), [[1.0, 2.0], [1.0, 2.0]])
    with pytest.raises(ValueError):
        QuantParams(np.array([0.5, 0.25], np.float32), 0)   # two scales need an axis


@pytest.mark.parametrize("op,attrs,in_shape,out_shape", [
    ("MaxPool", {"layout": "NCHW", "kernel_shape": (3, 3), "strides": (2, 2), "ceil_mode": 1}, (1, 1, 6, 6), (1, 1, 3, 3)),
    ("MaxPool", {"layout": "NCHW", "kernel_shape": (3, 3), "strides": (2, 2)}, (1, 1, 6, 6), (1, 1, 2, 2)),
    ("AveragePool", {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (2, 2), "pads": (0, 0, 1, 1)}, (1, 5, 5, 2), (1, 3, 3, 2)),
    ("GlobalAveragePool", {"layout": "NHWC"}, (1, 5, 7, 3), (1, 1, 1, 3)),
    ("ReduceMean", {"axes": (1, 2), "keepdims": 0}, (1, 5, 7, 3), (1, 3)),
    ("Slice", {"starts": (1,), "ends": (100,), "axes": (1,), "steps": (2,)}, (1, 7), (1, 3)),
    ("Slice", {"starts": (-1,), "ends": (-100,), "axes": (1,), "steps": (-1,)}, (1, 7), (1, 7)),
    ("Pad", {"pads": (0, 1, 0, 2)}, (1, 7), (1, 10)),
    ("DepthToSpace", {"blocksize": 2, "layout": "NCHW"}, (1, 8, 3, 3), (1, 2, 6, 6)),
    ("Unsqueeze", {"axes": (0, 3)}, (2, 3), (1, 2, 3, 1)),
    ("Squeeze", {"axes": (-1,)}, (2, 3, 1), (2, 3)),
    ("Flatten", {"axis": 2}, (2, 3, 4, 5), (6, 20)),
    ("Transpose", {"perm": (0, 2, 3, 1)}, (1, 3, 4, 5), (1, 4, 5, 3)),
    ("Resize", {"sizes": (1, 3, 8, 8), "mode": "linear"}, (1, 3, 4, 4), (1, 3, 8, 8)),
])
def test_shape_inference_hand_computed(op, attrs, in_shape, out_shape):
    g = Graph("s")
    x = g.add_input("x", DType.FLOAT32, in_shape)
    node = g.add_node(op, [x], attrs)
    assert node.outputs[0].shape == out_shape


def test_conv_transpose_shape_and_macc():
    g = Graph("ct")
    x = g.add_input("x", DType.FLOAT32, (1, 4, 5, 5))
    w = g.add_constant("w", np.zeros((4, 2, 3, 3), np.float32))   # NCHW: [C, O/g, kh, kw]
    node = g.add_node("ConvTranspose", [x, w], {"strides": (2, 2), "pads": (1, 1, 1, 1),
                                                "output_padding": (1, 1)})
    assert node.outputs[0].shape == (1, 2, 10, 10)                # (5-1)*2 + 3 - 2 + 1
    assert get_op("ConvTranspose").macc(node) == 4 * 5 * 5 * 3 * 3 * 2


def test_conv_channel_mismatch_names_node():
    g = Graph("m")
    x = g.add_input("x", DType.FLOAT32, (1, 3, 8, 8))
    w = g.add_constant("w", np.zeros((4, 2, 3, 3), np.float32))
    with pytest.raises(GraphError, match="node 'bad_conv' \\(Conv\\).*3 channels"):
        g.add_node("Conv", [x, w], name="bad_conv")


def test_every_op_declares_category_and_doc():
    ops = all_ops()
    assert len(ops) >= 37
    for name, opdef in ops.items():
        assert opdef.category in ("conv", "matmul", "elementwise", "activation", "pool", "reduce",
                                  "normalization", "shape", "resize", "quant"), name
        assert opdef.doc, f"{name} has no semantic docstring"
