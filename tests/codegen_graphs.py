"""Small quantized graphs built in code for the code generator's tests: one graph that uses
every runtime kernel family the generator emits (the "zoo"), and one with hostile names."""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import DType, Graph, QuantParams, verify

RNG = np.random.default_rng(7)


def _reseed() -> None:
    """Every builder call gives the same weights (the determinism test builds twice)."""
    global RNG
    RNG = np.random.default_rng(7)


def q(scale, zero_point=0, axis=None) -> QuantParams:
    return QuantParams(np.asarray(scale, np.float32), np.asarray(zero_point), axis)


def weights(shape) -> np.ndarray:
    return RNG.integers(-127, 128, shape).astype(np.int8)


def _node(graph: Graph, op: str, inputs, attrs=None, quant=None, name=None):
    out = graph.add_node(op, inputs, attrs or {}, name=name or f"{op.lower()}_{len(graph.nodes)}").outputs[0]
    out.quant = quant if quant is not None else inputs[0].quant
    return out


def _conv_block(graph: Graph, x):
    w = graph.add_constant("conv_w", weights((8, 3, 3, 4)), quant=q(np.full(8, 0.01), 0, 0))
    b = graph.add_constant("conv_b", RNG.integers(-500, 500, 8).astype(np.int32))
    # asymmetric pads (top != left, bottom != top): a pad_top / pad_left swap changes the numbers
    y = _node(graph, "Conv", [x, w, b], {"layout": "NHWC", "pads": (0, 1, 2, 1), "activation_min": 0.0},
              q(0.05, -128))
    dw = graph.add_constant("dw_w", weights((16, 3, 3, 1)), quant=q(np.linspace(0.005, 0.02, 16), 0, 0))
    y = _node(graph, "Conv", [y, dw], {"layout": "NHWC", "group": 8, "strides": (2, 2), "pads": (1, 0, 0, 1)},
              q(0.06, 3))
    y = _node(graph, "MaxPool", [y], {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (1, 1)})
    tw = graph.add_constant("tconv_w", weights((4, 2, 2, 16)), quant=q(np.full(4, 0.02), 0, 0))
    return _node(graph, "ConvTranspose", [y, tw], {"layout": "NHWC", "strides": (2, 2)}, q(0.2, 1))


def _elementwise_block(graph: Graph, y):
    a = _node(graph, "Sigmoid", [y], quant=q(1 / 256, -128))
    t = _node(graph, "Tanh", [y], quant=q(1 / 128, 0))
    s = _node(graph, "Add", [a, t], quant=q(0.02, -5))
    m = _node(graph, "Mul", [s, _node(graph, "HardSwish", [y], quant=q(0.03, -20))], quant=q(0.05, 2))
    m = _node(graph, "Sub", [m, _node(graph, "LeakyRelu", [y], {"alpha": 0.2}, q(0.04, 10))], quant=q(0.06, 0))
    c = _node(graph, "Concat", [m, s], {"axis": 3}, q(0.05, 1))
    c = _node(graph, "Pad", [c], {"pads": (0, 1, 0, 0, 0, 0, 2, 0)})
    c = _node(graph, "Slice", [c], {"starts": (1, 4), "ends": (6, 0), "axes": (1, 2), "steps": (2, -1)})
    c = _node(graph, "Resize", [c], {"sizes": (1, 6, 8, 8), "mode": "linear",
                                     "coordinate_transformation_mode": "half_pixel"})
    c = _node(graph, "Resize", [c], {"sizes": (1, 3, 4, 8), "mode": "nearest",
                                     "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"})
    return _node(graph, "Transpose", [c], {"perm": (0, 2, 1, 3)})


def zoo_graph() -> Graph:
    """float input -> quantize -> conv, depthwise, pools, transpose conv, activations,
    elementwise, concat, pad, slice, resize, transpose, mean, fully connected, softmax,
    requantize -> dequantize."""
    _reseed()
    graph = Graph("zoo")
    x = graph.add_input("x", DType.FLOAT32, (1, 6, 6, 4), layout="NHWC")
    y = _node(graph, "QuantizeLinear", [x], {"to": "int8"}, q(0.03, -3))
    y = _elementwise_block(graph, _conv_block(graph, y))
    pooled = _node(graph, "AveragePool", [y], {"layout": "NHWC", "kernel_shape": (2, 2), "strides": (2, 2),
                                               "pads": (0, 0, 1, 1)})
    mean = _node(graph, "ReduceMean", [pooled], {"axes": (1, 2), "keepdims": 0}, q(0.04, 2))
    fc_w = graph.add_constant("fc_w", weights((10, 8)), quant=q(np.full(10, 0.02), 0, 0))
    fc_b = graph.add_constant("fc_b", RNG.integers(-300, 300, 10).astype(np.int32))
    logits = _node(graph, "Gemm", [mean, fc_w, fc_b], {"transB": 1}, q(0.1, 4))
    probabilities = _node(graph, "Softmax", [logits], {"axis": -1}, q(1 / 256, -128))
    wide = _node(graph, "QuantizeLinear", [probabilities], {"to": "int16"}, q(1 / 32768, 0))
    graph.outputs = [_node(graph, "DequantizeLinear", [wide], name="probabilities"),
                     _node(graph, "Reshape", [y], {"shape": (1, 96)}, name="features")]
    graph.outputs[0].quant = None
    verify(graph)
    return graph


NASTY_NAMES = ['in "put"', "conv */ /* int", "3x3 conv", "int", "conv-1", "conv_1", "conv 1",
               "résumé\\n", "a" * 80, "??=define", "__reserved"]


def nasty_graph() -> Graph:
    """conv -> reshape -> gemm -> softmax with names full of quotes, comment ends, leading
    digits, keywords, non-ASCII and names that clash after cleaning."""
    _reseed()
    graph = Graph('model "*/ name')
    x = graph.add_input(NASTY_NAMES[0], DType.INT8, (1, 4, 4, 2), quant=q(0.05, -1), layout="NHWC")
    w = graph.add_constant(NASTY_NAMES[7], weights((3, 3, 3, 2)), quant=q(np.full(3, 0.02), 0, 0))
    y = graph.add_node("Conv", [x, w], {"layout": "NHWC", "pads": (1, 1, 1, 1)}, name=NASTY_NAMES[1],
                       output_names=[NASTY_NAMES[2]]).outputs[0]
    y.quant = q(0.1, 2)
    flat = graph.add_node("Reshape", [y], {"shape": (1, 48)}, name=NASTY_NAMES[3],
                          output_names=[NASTY_NAMES[4]]).outputs[0]
    flat.quant = y.quant
    fc = graph.add_constant(NASTY_NAMES[8], weights((5, 48)), quant=q(np.full(5, 0.01), 0, 0))
    z = graph.add_node("Gemm", [flat, fc], {"transB": 1}, name=NASTY_NAMES[5],
                       output_names=[NASTY_NAMES[6]]).outputs[0]
    z.quant = q(0.2, 0)
    out = graph.add_node("Softmax", [z], {"axis": -1}, name=NASTY_NAMES[9],
                         output_names=[NASTY_NAMES[10]]).outputs[0]
    out.quant = q(1 / 256, -128)
    graph.outputs = [out]
    verify(graph)
    return graph
