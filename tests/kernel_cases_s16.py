"""Randomized single-node 16x8 cases (int16 activations, zero points 0, int8 weights, int64
bias) for the 16x8 kernel variants, as one graph of independent branches (see
kernel_cases.py): conv (odd channels, C = 1 / 3, stride 2, dilation, padding, pointwise,
K past the 504-product chunk), depthwise, fully connected and same-shape Add, with full-range
int16 inputs and large biases."""
from __future__ import annotations

import numpy as np

from kernel_cases import _activation, q
from mcudeploy.ir import DType, Graph, verify


def _conv(graph: Graph, rng, x, case: dict, index: int):
    channels = x.shape[3]
    kernel, group = case.get("kernel", (3, 3)), case.get("group", 1)
    out_channels = case["out"] if group == 1 else channels
    depth = kernel[0] * kernel[1] * (channels // group)
    weights = rng.integers(-127, 128, (out_channels, *kernel, channels // group)).astype(np.int8)
    scales = rng.uniform(0.002, 0.02, out_channels) if case.get("per_channel", True) else np.array([0.01])
    w = graph.add_constant(f"w{index}", weights, quant=q(scales, np.zeros(scales.size), 0 if scales.size > 1 else None))
    bias = rng.integers(-2**26, 2**26, out_channels).astype(np.int64)
    bias[::4] = rng.choice([2**40, -(2**40) - 5, 2**45 + 1], size=bias[::4].size)   # far past int32
    inputs = [x, w] + ([graph.add_constant(f"b{index}", bias)] if case.get("bias", True) else [])
    attrs = {"layout": "NHWC", "strides": case.get("strides", (1, 1)), "pads": case.get("pads", (0, 0, 0, 0)),
             "dilations": case.get("dilations", (1, 1)), "group": group, **_activation(rng)}
    node = graph.add_node("Conv", inputs, attrs, name=f"conv{index}")
    node.outputs[0].quant = q(float(x.quant.scale[0]) * float(scales.mean()) * np.sqrt(depth) * 300)
    return node.outputs[0]


def _gemm(graph: Graph, rng, x, case: dict, index: int):
    depth, units = x.shape[-1], case["out"]
    scale = rng.uniform(0.002, 0.02)
    w = graph.add_constant(f"w{index}", rng.integers(-127, 128, (units, depth)).astype(np.int8), quant=q(scale))
    b = graph.add_constant(f"b{index}", rng.integers(-2**26, 2**26, units).astype(np.int64))
    node = graph.add_node("Gemm", [x, w, b], {"transB": 1, **_activation(rng)}, name=f"gemm{index}")
    node.outputs[0].quant = q(float(x.quant.scale[0]) * scale * np.sqrt(depth) * 300)
    return node.outputs[0]


def _add(graph: Graph, rng, x, case: dict, index: int):
    other = graph.add_input(f"y{index}", DType.INT16, x.shape, quant=q(rng.uniform(1e-5, 1e-3)))
    node = graph.add_node("Add", [x, other], {**_activation(rng)}, name=f"add{index}")
    node.outputs[0].quant = q(rng.uniform(2e-5, 2e-3))
    return node.outputs[0]


BUILDERS = {"Conv": _conv, "Gemm": _gemm, "Add": _add}


def case_graph_s16(cases: list[dict], seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """One graph with a branch per case, and one full-range int16 sample per input."""
    rng = np.random.default_rng(seed)
    graph, outputs = Graph("kernel_cases_s16"), []
    for index, case in enumerate(cases):
        x = graph.add_input(f"x{index}", DType.INT16, tuple(case["shape"]), quant=q(rng.uniform(1e-5, 1e-3)))
        outputs.append(BUILDERS[case["op"]](graph, rng, x, case, index))
    graph.outputs = outputs
    verify(graph)
    feeds = {v.name: rng.integers(-32768, 32768, (1, *v.shape)).astype(np.int16) for v in graph.inputs}
    return graph, feeds


def random_cases_s16(seed: int, count: int) -> list[dict]:
    """Randomized shapes for every 16x8 variant (odd sizes, strides, dilation, padding)."""
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        kind = ["conv", "pointwise", "depthwise", "gemm", "Add"][index % 5]
        height, width = int(rng.integers(3, 9)), int(rng.integers(3, 9))
        channels = int(rng.choice([1, 3, 4, 5, 8, 9, 16, 17, 24, 33]))
        if kind in ("conv", "depthwise"):
            kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
            dilation = (int(rng.integers(1, 3)), 1) if rng.random() < 0.3 else (1, 1)
            height = max(height, (kernel[0] - 1) * dilation[0] + 1)
            width = max(width, (kernel[1] - 1) * dilation[1] + 1)
            case = {"op": "Conv", "shape": (1, height, width, channels), "kernel": kernel,
                    "strides": (int(rng.integers(1, 3)), int(rng.integers(1, 3))), "dilations": dilation,
                    "pads": tuple(int(p) for p in rng.integers(0, 2, 4)), "per_channel": bool(rng.random() < 0.7),
                    "bias": bool(rng.random() < 0.9)}
            if kind == "conv":
                case["out"] = int(rng.choice([1, 2, 3, 5, 8, 16, 19]))
            else:
                case["group"], case["out"] = channels, channels   # C = 1: a plain conv
        elif kind == "pointwise":
            case = {"op": "Conv", "shape": (1, height, width, channels), "kernel": (1, 1),
                    "out": int(rng.choice([1, 4, 7, 16, 32]))}
        elif kind == "gemm":
            case = {"op": "Gemm", "shape": (int(rng.integers(1, 4)), int(rng.choice([1, 7, 16, 40, 64, 1030]))),
                    "out": int(rng.choice([1, 3, 10, 16]))}
        else:
            case = {"op": "Add", "shape": (1, height, width, channels)}
        cases.append(case)
    return cases


def chain_graph_s16(seed: int = 0, channels: int = 12) -> tuple[Graph, dict[str, np.ndarray]]:
    """A small sequential 16x8 network (conv, depthwise, pointwise, residual Add, fully
    connected) whose tensors the planner overlaps: the variants' overlap rules are exercised."""
    rng = np.random.default_rng(seed)
    graph = Graph("kernel_chain_s16")
    x = graph.add_input("x", DType.INT16, (1, 10, 9, 3), quant=q(1e-4))
    y = _conv(graph, rng, x, {"kernel": (3, 3), "out": channels, "pads": (1, 1, 1, 1)}, 0)
    z = _conv(graph, rng, y, {"kernel": (3, 3), "group": channels, "pads": (1, 1, 1, 1)}, 1)
    z = _conv(graph, rng, z, {"kernel": (1, 1), "out": channels}, 2)
    s = graph.add_node("Add", [y, z], {}, name="residual")
    s.outputs[0].quant = q(float(y.quant.scale[0]) * 2)
    p = _conv(graph, rng, s.outputs[0], {"kernel": (3, 3), "out": 2 * channels, "strides": (2, 2)}, 3)
    flat = graph.add_node("Reshape", [p], {"shape": (1, int(np.prod(p.shape)))}, name="flatten")
    flat.outputs[0].quant = p.quant
    graph.outputs = [_gemm(graph, rng, flat.outputs[0], {"out": 10}, 4)]
    verify(graph)
    return graph, {"x": rng.integers(-32768, 32768, (1, *x.shape)).astype(np.int16)}
