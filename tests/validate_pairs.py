"""A tiny float / int8 TFLite model pair for the validation tests, quantized here in numpy.

Network: ``x[1,6,6,2] -> Conv 3x3 SAME + ReLU -> y1[1,6,6,4] -> Conv 1x1 -> y2[1,6,6,6]
-> Reshape -> flat[1,216] -> FullyConnected -> logits[1,5]``. The int8 twin follows the TFLite
scheme: asymmetric int8 activations from the float model's observed ranges on uniform
``[-1, 1)`` inputs, symmetric per-tensor int8 weights, int32 biases at ``s_in * s_w``.
``bad_scale`` multiplies the declared scale of the second convolution's weights (and bias)
while keeping their integers: a deliberately wrong quantization whose error starts at ``y2``.

:func:`qdq_graph` is a three-node QDQ graph (QuantizeLinear, DequantizeLinear, Relu).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mcudeploy.importers import load_model
from mcudeploy.ir import DType, Graph, QuantParams, verify
from mcudeploy.reference import run_float
from tflite_builders import Op, Tensor, build_model

INPUT_SHAPE = (1, 6, 6, 2)
ACTIVATIONS = ("y1", "y2", "logits")


def _weights(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w1": rng.normal(0, 0.5, (4, 3, 3, 2)), "b1": rng.normal(0, 0.1, 4),
            "w2": rng.normal(0, 0.5, (6, 1, 1, 4)), "b2": rng.normal(0, 0.1, 6),
            "w3": rng.normal(0, 0.2, (5, 216)), "b3": rng.normal(0, 0.1, 5)}


def _ops(names: dict[str, int]) -> list[Op]:
    return [Op("CONV_2D", [names["x"], names["w1"], names["b1"]], [names["y1"]],
               {"padding": 0, "stride_w": 1, "stride_h": 1, "fused_activation_function": 1}),
            Op("CONV_2D", [names["y1"], names["w2"], names["b2"]], [names["y2"]],
               {"padding": 1, "stride_w": 1, "stride_h": 1}),
            Op("RESHAPE", [names["y2"], names["shape"]], [names["flat"]], {"new_shape": [1, 216]}),
            Op("FULLY_CONNECTED", [names["flat"], names["w3"], names["b3"]], [names["logits"]])]


def _shapes(weights: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {"x": INPUT_SHAPE, "y1": (1, 6, 6, 4), "y2": (1, 6, 6, 6), "flat": (1, 216),
            "logits": (1, 5), "shape": (2,), **{k: v.shape for k, v in weights.items()}}


ORDER = ("x", "w1", "b1", "y1", "w2", "b2", "y2", "shape", "flat", "w3", "b3", "logits")


def float_model(path: Path) -> Path:
    weights, shapes = _weights(), _shapes(_weights())
    data = {**{k: v.astype(np.float32) for k, v in weights.items()},
            "shape": np.array([1, 216], np.int32)}
    tensors = [Tensor(n, shapes[n], "int32" if n == "shape" else "float32", data.get(n)) for n in ORDER]
    path.write_bytes(build_model(tensors, _ops({n: i for i, n in enumerate(ORDER)}), [0], [11]))
    return path


def _activation_params(low: float, high: float) -> tuple[float, int]:
    low, high = min(low, 0.0), max(high, 0.0)
    scale = (high - low) / 255.0
    return scale, int(np.clip(round(-128 - low / scale), -128, 127))


def observed_ranges(float_path: Path) -> dict[str, tuple[float, float]]:
    graph = load_model(float_path)
    batch = np.random.default_rng(0).uniform(-1, 1, (64, *INPUT_SHAPE)).astype(np.float32)
    runs = [run_float(graph, {"x": sample}, capture=True) for sample in batch]
    return {name: (float(min(r[name].min() for r in runs)), float(max(r[name].max() for r in runs)))
            for name in ACTIVATIONS}


def int8_model(path: Path, ranges: dict[str, tuple[float, float]], *, bad_scale: float = 1.0,
               prefix: str = "") -> Path:
    """The int8 twin; ``prefix`` renames every activation tensor (names then differ)."""
    weights = _weights()
    params = {"x": _activation_params(-1.0, 1.0), **{n: _activation_params(*ranges[n]) for n in ACTIVATIONS}}
    params["flat"] = params["y2"]
    inputs_of = {"w1": "x", "w2": "y1", "w3": "flat"}
    tensors = {}
    for name in ("x", "y1", "y2", "flat", "logits"):
        scale, zero_point = params[name]
        tensors[name] = Tensor(prefix + name, _shapes(weights)[name], "int8", None,
                               ([scale], [zero_point], 0))
    for weight, source in inputs_of.items():
        bias = "b" + weight[1:]
        scale = float(np.abs(weights[weight]).max() / 127)
        integers = np.clip(np.round(weights[weight] / scale), -127, 127).astype(np.int8)
        bias_scale = params[source][0] * scale
        bias_integers = np.round(weights[bias] / bias_scale).astype(np.int32)
        declared = scale * (bad_scale if weight == "w2" else 1.0)
        tensors[weight] = Tensor(weight, integers.shape, "int8", integers, ([declared], [0], 0))
        tensors[bias] = Tensor(bias, bias_integers.shape, "int32", bias_integers,
                               ([params[source][0] * declared], [0], 0))
    tensors["shape"] = Tensor("shape", (2,), "int32", np.array([1, 216], np.int32))
    ordered = [tensors[n] for n in ORDER]
    path.write_bytes(build_model(ordered, _ops({n: i for i, n in enumerate(ORDER)}), [0], [11]))
    return path


def tiny_pair(folder: Path, *, bad_scale: float = 1.0, prefix: str = "") -> tuple[Path, Path]:
    """``(float model, int8 model)`` written into ``folder``."""
    float_path = float_model(folder / "tiny_float.tflite")
    name = "tiny_bad_int8.tflite" if bad_scale != 1.0 else "tiny_int8.tflite"
    return float_path, int8_model(folder / name, observed_ranges(float_path),
                                  bad_scale=bad_scale, prefix=prefix)


def qdq_graph() -> Graph:
    graph = Graph("qdq")
    x = graph.add_input("x", DType.FLOAT32, (1, 4))
    quantized = graph.add_node("QuantizeLinear", [x], {"to": "int8"}, name="q").outputs[0]
    quantized.quant = QuantParams(np.float32(0.5), 3)
    back = graph.add_node("DequantizeLinear", [quantized], name="dq").outputs[0]
    graph.outputs = [graph.add_node("Relu", [back], name="relu").outputs[0]]
    verify(graph)
    return graph
