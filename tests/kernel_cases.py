"""Randomized single-node cases for the optimised kernel variants, built into one graph of
independent branches (every branch: its own input, one node, its own graph output), so that
one generated project and one emulator run check them all.

Each case is a dict naming the op and its geometry; :func:`case_graph` turns a list of
cases into a verified quantized graph and feeds. The shapes cover what the variants
special-case: odd channel counts, 1 and 3 input channels, stride 2, dilation, asymmetric
padding, pointwise 1x1, K not a multiple of 4 / 16, zero points at the extremes (-128,
127), per-tensor and per-channel weights, fused clamps, huge biases (the "wide" channels).
"""
from __future__ import annotations

import numpy as np

from mcudeploy.ir import DType, Graph, QuantParams, verify


def q(scale, zero_point=0, axis=None) -> QuantParams:
    return QuantParams(np.asarray(scale, np.float32).reshape(-1), np.asarray(zero_point).reshape(-1), axis)


def _int8(rng, shape) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


def _zero_point(rng, extreme: str | None) -> int:
    return {"low": -128, "high": 127}.get(extreme, int(rng.integers(-100, 100)))


def _activation(rng) -> dict:
    choice = int(rng.integers(0, 3))
    return [{}, {"activation_min": 0.0}, {"activation_min": 0.0, "activation_max": 6.0}][choice]


def _conv(graph: Graph, rng, x, case: dict, index: int):
    channels = x.shape[3]
    kernel, group = case.get("kernel", (3, 3)), case.get("group", 1)
    out_channels = case["out"] if group == 1 else channels * case.get("multiplier", 1)
    depth = kernel[0] * kernel[1] * (channels // group)
    weights = rng.integers(-127, 128, (out_channels, *kernel, channels // group)).astype(np.int8)
    scales = (rng.uniform(0.002, 0.02, out_channels) if case.get("per_channel", True)
              else np.array([rng.uniform(0.002, 0.02)]))
    bias = rng.integers(-20000, 20000, out_channels).astype(np.int32)
    if case.get("wide_bias"):
        bias[::3] = rng.choice([2**30, -(2**30) - 5, 2**31 - 1], size=bias[::3].size)
    w = graph.add_constant(f"w{index}", weights, quant=q(scales, np.zeros(scales.size), 0 if scales.size > 1 else None))
    inputs = [x, w] + ([graph.add_constant(f"b{index}", bias)] if case.get("bias", True) else [])
    attrs = {"layout": "NHWC", "strides": case.get("strides", (1, 1)), "pads": case.get("pads", (0, 0, 0, 0)),
             "dilations": case.get("dilations", (1, 1)), "group": group, **_activation(rng)}
    node = graph.add_node("Conv", inputs, attrs, name=f"conv{index}")
    out_scale = float(x.quant.scale[0]) * float(scales.mean()) * np.sqrt(depth) * 74 * 74 / 40 * case.get("spread", 1)
    node.outputs[0].quant = q(out_scale, _zero_point(rng, case.get("out_zero_point")))
    return node.outputs[0]


def _gemm(graph: Graph, rng, x, case: dict, index: int):
    depth, units = x.shape[-1], case["out"]
    weights = rng.integers(-127, 128, (units, depth)).astype(np.int8)
    scale = rng.uniform(0.002, 0.02)
    w = graph.add_constant(f"w{index}", weights, quant=q(scale))
    bias = rng.integers(-20000, 20000, units).astype(np.int32)
    if case.get("wide_bias"):
        bias[::3] = rng.choice([2**30, -(2**30) - 5, 2**31 - 1], size=bias[::3].size)
    b = graph.add_constant(f"b{index}", bias)
    node = graph.add_node("Gemm", [x, w, b], {"transB": 1, **_activation(rng)}, name=f"gemm{index}")
    node.outputs[0].quant = q(float(x.quant.scale[0]) * scale * np.sqrt(depth) * 74 * 74 / 40, _zero_point(rng, None))
    return node.outputs[0]


def _binary(graph: Graph, rng, x, case: dict, index: int):
    other = graph.add_input(f"y{index}", DType.INT8, x.shape,
                            quant=q(rng.uniform(0.01, 0.1), _zero_point(rng, case.get("zero_point"))))
    node = graph.add_node(case["op"], [x, other], {**_activation(rng)}, name=f"{case['op'].lower()}{index}")
    node.outputs[0].quant = q(rng.uniform(0.02, 0.2), _zero_point(rng, None))
    return node.outputs[0]


def _pool(graph: Graph, rng, x, case: dict, index: int):
    attrs = {"layout": "NHWC", "kernel_shape": case["kernel"], "strides": case.get("strides", (1, 1)),
             "pads": case.get("pads", (0, 0, 0, 0)), **_activation(rng)}
    node = graph.add_node(case["op"], [x], attrs, name=f"{case['op'].lower()}{index}")
    node.outputs[0].quant = x.quant
    return node.outputs[0]


BUILDERS = {"Conv": _conv, "Gemm": _gemm, "Add": _binary, "Mul": _binary, "AveragePool": _pool, "MaxPool": _pool}


def case_graph(cases: list[dict], seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """One graph with a branch per case, and one random sample per input (batch axis 1)."""
    rng = np.random.default_rng(seed)
    graph, outputs, feeds = Graph("kernel_cases"), [], {}
    for index, case in enumerate(cases):
        quant = q(rng.uniform(0.01, 0.1), _zero_point(rng, case.get("zero_point")))
        x = graph.add_input(f"x{index}", DType.INT8, tuple(case["shape"]), quant=quant)
        outputs.append(BUILDERS[case["op"]](graph, rng, x, case, index))
    graph.outputs = outputs
    verify(graph)
    for value in graph.inputs:
        feeds[value.name] = _int8(rng, (1, *value.shape))
    return graph, feeds


def random_cases(seed: int, count: int) -> list[dict]:
    """Randomized shapes for every optimised op (odd sizes, strides, dilation, padding)."""
    rng = np.random.default_rng(seed)
    cases = []
    extremes = [None, "low", "high"]
    for index in range(count):
        kind = ["conv", "pointwise", "depthwise", "gemm", "Add", "Mul", "AveragePool", "MaxPool"][index % 8]
        height, width = int(rng.integers(3, 10)), int(rng.integers(3, 10))
        channels = int(rng.choice([1, 3, 4, 5, 8, 16, 17, 24, 33]))
        common = {"zero_point": extremes[int(rng.integers(0, 3))]}
        if kind in ("conv", "depthwise"):
            kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
            stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
            dilation = (int(rng.integers(1, 3)), 1) if rng.random() < 0.3 else (1, 1)
            pads = tuple(int(p) for p in rng.integers(0, 2, 4))
            height = max(height, (kernel[0] - 1) * dilation[0] + 1)
            width = max(width, (kernel[1] - 1) * dilation[1] + 1)
            case = {"op": "Conv", "shape": (1, height, width, channels), "kernel": kernel, "strides": stride,
                    "dilations": dilation, "pads": pads, "per_channel": bool(rng.random() < 0.7),
                    "wide_bias": bool(rng.random() < 0.2), "bias": bool(rng.random() < 0.9), **common}
            if kind == "conv":
                case["out"] = int(rng.choice([1, 2, 3, 5, 8, 16, 19]))
            else:
                case["group"], case["out"] = channels, channels   # C = 1: a plain conv
        elif kind == "pointwise":
            case = {"op": "Conv", "shape": (1, height, width, channels), "kernel": (1, 1),
                    "out": int(rng.choice([1, 4, 7, 16, 32])), **common}
        elif kind == "gemm":
            case = {"op": "Gemm", "shape": (int(rng.integers(1, 4)), int(rng.choice([1, 7, 16, 40, 64]))),
                    "out": int(rng.choice([1, 3, 10, 16])), **common}
        elif kind in ("Add", "Mul"):
            case = {"op": kind, "shape": (1, height, width, channels), **common}
        else:
            kernel = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
            case = {"op": kind, "shape": (1, height, width, channels), "kernel": kernel,
                    "strides": (int(rng.integers(1, 3)), int(rng.integers(1, 3))),
                    "pads": (int(rng.integers(0, min(2, kernel[0]))), int(rng.integers(0, min(2, kernel[1]))), 0, 0),
                    **common}
        cases.append(case)
    return cases


def chain_graph(seed: int = 0, channels: int = 16) -> tuple[Graph, dict[str, np.ndarray]]:
    """A small sequential network (conv, depthwise, pointwise, residual add, pools, fully
    connected) whose tensors the planner overlaps: the variants' overlap rules are exercised."""
    rng = np.random.default_rng(seed)
    graph = Graph("kernel_chain")
    x = graph.add_input("x", DType.INT8, (1, 12, 11, 3), quant=q(0.05, -128))
    y = _conv(graph, rng, x, {"kernel": (3, 3), "out": channels, "pads": (1, 1, 1, 1)}, 0)
    z = _conv(graph, rng, y, {"kernel": (3, 3), "group": channels, "pads": (1, 1, 1, 1)}, 1)
    z = _conv(graph, rng, z, {"kernel": (1, 1), "out": channels}, 2)
    s = graph.add_node("Add", [y, z], {}, name="residual")
    s.outputs[0].quant = q(0.1, 3)
    p = _pool(graph, rng, s.outputs[0], {"op": "MaxPool", "kernel": (2, 2), "strides": (2, 2)}, 3)
    p = _conv(graph, rng, p, {"kernel": (3, 3), "out": 2 * channels, "strides": (2, 2), "pads": (1, 1, 1, 1)}, 4)
    p = _pool(graph, rng, p, {"op": "AveragePool", "kernel": tuple(p.shape[1:3])}, 5)
    flat = graph.add_node("Reshape", [p], {"shape": (1, 2 * channels)}, name="flatten")
    flat.outputs[0].quant = p.quant
    graph.outputs = [_gemm(graph, rng, flat.outputs[0], {"out": 10}, 6)]
    verify(graph)
    return graph, {"x": _int8(rng, (1, *x.shape))}


def mismatches(graph: Graph, feeds: dict[str, np.ndarray], target: str, on: str,
               kernels: str = "fastest") -> tuple[list[str], object]:
    """Deploy ``graph`` for ``target`` (its core picks the variants; ``fastest`` by default, so
    that a variant under test runs even where it costs arena), run the generated code on
    ``on`` (host, qemu-m4, qemu-m55) and list every output that differs from ``run_int``
    (with the node's variant); also returns the deployment."""
    from mcudeploy.driver import deploy
    from mcudeploy.options import DeploymentOptions
    from mcudeploy.reference.int_executor import run_int
    from mcudeploy.validate.generated_code import run_generated
    deployment = deploy(graph, DeploymentOptions(target=target, kernels=kernels))
    result = run_generated(deployment, feeds, on)
    count = next(iter(feeds.values())).shape[0]
    wrong = []
    for index in range(count):
        expected = run_int(graph, {name: array[index] for name, array in feeds.items()})
        for value in graph.outputs:
            actual = result.outputs[value.name][index]
            if not np.array_equal(np.asarray(expected[value.name]), actual):
                node = value.producer.name
                wrong.append(f"{node} ({deployment.kernels.choices[node].variant}, sample {index}): "
                             f"{np.count_nonzero(np.asarray(expected[value.name]) != actual)} of {value.size} differ")
    return wrong, deployment
