"""Single-layer full-integer IR graphs built in code, for the instruction-model fit
(``tools/fit_instruction_model.py``) and the estimator benchmark (``benchmarks/estimate_bench.py``).

Each builder adds one layer reading its own int8 graph input and writing a graph output, so
many layers of different shapes can share one generated program (one QEMU run) and still be
measured one by one (the per-layer profile). Weights are seeded random int8, per-channel
scales; the numbers are not a trained model, the *shapes* are what the fit needs.

    graph = LayerBatch("batch0"); graph.conv(h=16, w=16, c=8, o=16, k=(3, 3), stride=1, pad="same")
    LayerBatch("wide", weight_scales=(0.3, 2.0))   # some channels requantize with a shift >= 0
    graph.finish() -> Graph (verified)
"""
from __future__ import annotations

import math

import numpy as np

from mcudeploy.ir import DType, Graph, QuantParams, verify


def quant(scale, zero_point=0, axis=None) -> QuantParams:
    return QuantParams(np.asarray(scale, np.float32), np.asarray(zero_point), axis)


def same_pads(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TFLite SAME padding of one axis: (before, after)."""
    out = math.ceil(size / stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    return total // 2, total - total // 2


class LayerBatch:
    """A graph of independent single layers (module docstring)."""

    def __init__(self, name: str, seed: int = 0, weight_scales: tuple[float, float] = (0.002, 0.02),
                 huge_bias_share: float = 0.0) -> None:
        self.graph = Graph(name)
        self.rng = np.random.default_rng(seed)
        # per-channel weight scales drawn from this range; above ~0.8 (input 0.05, output 0.08)
        # a channel's requantization multiplier needs a shift >= 0 (the kernels' general path)
        self.weight_scales = weight_scales
        # share of channels whose bias is ~ +-2^30 (dead channels of trained models do this):
        # the optimised variants requantize those in their 64-bit "wide" form
        self.huge_bias_share = huge_bias_share
        self.outputs = []
        self.count = 0            # names handed out
        self.inputs = 0

    def _name(self, op: str) -> str:
        self.count += 1
        return f"l{self.count}_{op.lower()}"

    def input(self, shape, scale=0.05, zero_point=-3, dtype=DType.INT8):
        self.inputs += 1
        return self.graph.add_input(f"in{self.inputs}", dtype, tuple(shape), layout="NHWC",
                                    quant=quant(scale, zero_point))

    def _weights(self, name: str, shape, axis_size: int):
        data = self.rng.integers(-127, 128, shape).astype(np.int8)
        scales = self.rng.uniform(*self.weight_scales, axis_size)
        return self.graph.add_constant(name, data, quant=quant(scales, np.zeros(axis_size, np.int64), 0))

    def _bias(self, name: str, size: int):
        bias = self.rng.integers(-2000, 2000, size)
        if self.huge_bias_share:
            huge = self.rng.random(size) < self.huge_bias_share
            bias[huge] = np.sign(bias[huge] + 0.5) * ((1 << 30) + self.rng.integers(0, 1 << 20, int(huge.sum())))
        return self.graph.add_constant(name, bias.astype(np.int32))

    def _node(self, op: str, inputs, attrs, scale=0.08, zero_point=2, name=None):
        node = self.graph.add_node(op, inputs, attrs, name=name or self._name(op))
        for out in node.outputs:
            out.quant = quant(scale, zero_point)
        self.outputs.append(node.outputs[0])
        return node

    def conv(self, h, w, c, o, k=(3, 3), stride=(1, 1), pad="same", group=1, dilation=(1, 1),
             relu=False, name=None):
        """Conv (``group == c`` and ``o % c == 0``: depthwise); ``pad`` "same", "valid" or 4 ints."""
        stride = (stride, stride) if isinstance(stride, int) else tuple(stride)
        k = (k, k) if isinstance(k, int) else tuple(k)
        x = self.input((1, h, w, c))
        if pad == "same":
            top, bottom = same_pads(h, k[0], stride[0], dilation[0])
            left, right = same_pads(w, k[1], stride[1], dilation[1])
            pads = (top, left, bottom, right)
        else:
            pads = (0, 0, 0, 0) if pad == "valid" else tuple(pad)
        weights = self._weights(self._name("w"), (o, k[0], k[1], c // group), o)
        attrs = {"layout": "NHWC", "strides": stride, "pads": pads, "group": group,
                 "dilations": tuple(dilation)}
        if relu:
            attrs["activation_min"] = 0.0
        return self._node("Conv", [x, weights, self._bias(self._name("b"), o)], attrs, name=name)

    def depthwise(self, h, w, c, k=(3, 3), stride=(1, 1), pad="same", multiplier=1, name=None):
        return self.conv(h, w, c, c * multiplier, k, stride, pad, group=c, name=name)

    def fully_connected(self, depth, units, rows=1, name=None):
        x = self.input((rows, depth))
        weights = self._weights(self._name("w"), (units, depth), units)
        return self._node("Gemm", [x, weights, self._bias(self._name("b"), units)], {"transB": 1}, name=name)

    def binary(self, op, shape, other_shape=None):
        a = self.input(shape, 0.05, -3)
        b = self.input(other_shape or shape, 0.07, 5)
        return self._node(op, [a, b], {}, scale=0.1, zero_point=-1)

    def pool(self, op, h, w, c, k=(2, 2), stride=(2, 2), pad="valid"):
        x = self.input((1, h, w, c))
        k, stride = tuple(k), tuple(stride)
        if pad == "same":
            top, bottom = same_pads(h, k[0], stride[0])
            left, right = same_pads(w, k[1], stride[1])
            pads = (top, left, bottom, right)
        else:
            pads = (0, 0, 0, 0)
        return self._node(op, [x], {"layout": "NHWC", "kernel_shape": k, "strides": stride, "pads": pads},
                          scale=0.05, zero_point=-3)

    def pool_after(self, node, op="MaxPool", k=(2, 2), stride=(2, 2)):
        """A pooling layer reading ``node``'s output (which stops being a graph output)."""
        source = node.outputs[0]
        self.outputs.remove(source)
        return self._node(op, [source], {"layout": "NHWC", "kernel_shape": tuple(k), "strides": tuple(stride),
                                         "pads": (0, 0, 0, 0)}, scale=source.quant.scale, zero_point=source.quant.zero_point)

    def unary(self, op, shape, attrs=None, scale=0.08, zero_point=2):
        x = self.input(shape)
        return self._node(op, [x], attrs or {}, scale=scale, zero_point=zero_point)

    def softmax(self, rows, depth, scale=0.1):
        x = self.input((rows, depth), scale, 3)
        return self._node("Softmax", [x], {"axis": -1}, scale=1 / 256, zero_point=-128)

    def reshape(self, shape, new_shape):
        x = self.input(shape)
        node = self.graph.add_node("Reshape", [x], {"shape": tuple(new_shape)}, name=self._name("Reshape"))
        node.outputs[0].quant = x.quant
        self.outputs.append(node.outputs[0])
        return node

    def concat(self, shapes, axis=3):
        inputs = [self.input(shape, 0.05, -3) for shape in shapes]
        return self._node("Concat", inputs, {"axis": axis}, scale=0.05, zero_point=-3)

    def mean(self, h, w, c):
        x = self.input((1, h, w, c))
        return self._node("ReduceMean", [x], {"axes": (1, 2), "keepdims": 1}, scale=0.05, zero_point=-3)

    def slice(self, shape, starts, ends, axes, steps):
        """A Slice of an NHWC tensor (a tile's stripe of a spilled tensor: rows, columns, channels)."""
        x = self.input(shape)
        node = self.graph.add_node("Slice", [x], {"starts": tuple(starts), "ends": tuple(ends), "axes": tuple(axes),
                                                  "steps": tuple(steps)}, name=self._name("Slice"))
        node.outputs[0].quant = x.quant
        self.outputs.append(node.outputs[0])
        return node

    def resize(self, shape, size, mode="nearest"):
        """Resize (nearest: the U-Net decoder's up-sampling) of an NHWC tensor to ``size`` (h, w)."""
        x = self.input(shape)
        node = self.graph.add_node("Resize", [x], {"sizes": (shape[0], size[0], size[1], shape[3]), "mode": mode,
                                                   "coordinate_transformation_mode": "asymmetric",
                                                   "nearest_mode": "floor"}, name=self._name("Resize"))
        node.outputs[0].quant = x.quant
        self.outputs.append(node.outputs[0])
        return node

    def finish(self) -> Graph:
        self.graph.outputs = list(self.outputs)
        verify(self.graph)
        return self.graph


# The STM32N6570-DK single layers of ../shared/data/published_latency/n6_single_layers.csv
# (64x64x3 input), by the csv's (layer, filters, kernel): one builder each, for the estimate
# bench and its test.
N6_SINGLE_LAYERS = {   # csv (layer, filters, kernel) -> builder
    ("Conv2D", "16", "3x3"): lambda b: b.conv(64, 64, 3, 16, 3),
    ("Conv2D (pointwise)", "32", "1x1"): lambda b: b.conv(64, 64, 3, 32, 1),
    ("Conv2D", "32", "5x5"): lambda b: b.conv(64, 64, 3, 32, 5),
    ("Conv2D", "32", "7x7"): lambda b: b.conv(64, 64, 3, 32, 7),
    ("Conv2D", "32", "3x3"): lambda b: b.conv(64, 64, 3, 32, 3),
    ("Conv2D", "64", "3x3"): lambda b: b.conv(64, 64, 3, 64, 3),
    ("Conv2D+MaxPool", "16", "3x3"): lambda b: b.pool_after(b.conv(64, 64, 3, 16, 3)),
    ("DepthwiseConv2D", "3", "3x3"): lambda b: b.depthwise(64, 64, 3, 3),
}
