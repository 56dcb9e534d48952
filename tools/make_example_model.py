"""Generate ``examples/kws_cnn.onnx``: the small example model the README runs.

A keyword-spotting-shaped CNN (input 1x1x49x10 MFCC frames, 12 classes) written the way
PyTorch exports it: NCHW, Conv + BatchNormalization + Relu blocks, a depthwise-separable
block, a skip Add, GlobalAveragePool, Flatten, Gemm, Softmax, opset 13. The weights are
seeded random numbers (``numpy.random.default_rng(2026)``): the model is an example of
*shape and structure* for analysis and code generation, not a trained classifier.

Run ``python tools/make_example_model.py`` to regenerate; the output is byte-identical.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "examples" / "kws_cnn.onnx"


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(2026)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn_relu(x: str, name: str, cin: int, cout: int, k: tuple[int, int], stride: int,
                     group: int = 1, relu: bool = True) -> str:
        w = const(f"{name}.weight", rng.normal(0, (2 / (cin // group * k[0] * k[1])) ** 0.5,
                                                (cout, cin // group, *k)))
        pads = [k[0] // 2, k[1] // 2, k[0] // 2, k[1] // 2]
        nodes.append(helper.make_node("Conv", [x, w], [f"{name}.conv"], name=f"{name}/conv",
                                      kernel_shape=list(k), strides=[stride, stride], pads=pads,
                                      group=group))
        bn = [const(f"{name}.bn.{p}", v) for p, v in (
            ("scale", rng.uniform(0.5, 1.5, cout)), ("bias", rng.normal(0, 0.1, cout)),
            ("mean", rng.normal(0, 0.1, cout)), ("var", rng.uniform(0.5, 1.5, cout)))]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv", *bn], [f"{name}.bn"],
                                      name=f"{name}/bn", epsilon=1e-5))
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"], name=f"{name}/relu"))
        return f"{name}.relu"

    x = conv_bn_relu("input", "stem", 1, 32, (5, 3), 2)
    y = conv_bn_relu(x, "block1.dw", 32, 32, (3, 3), 1, group=32)
    y = conv_bn_relu(y, "block1.pw", 32, 32, (1, 1), 1, relu=False)
    nodes.append(helper.make_node("Add", [x, y], ["block1.add"], name="block1/add"))
    nodes.append(helper.make_node("Relu", ["block1.add"], ["block1.out"], name="block1/relu"))
    y = conv_bn_relu("block1.out", "block2.dw", 32, 32, (3, 3), 2, group=32)
    y = conv_bn_relu(y, "block2.pw", 32, 64, (1, 1), 1)
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["pool"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1))
    w = const("fc.weight", rng.normal(0, 0.1, (12, 64)))
    b = const("fc.bias", np.zeros(12))
    nodes.append(helper.make_node("Gemm", ["flat", w, b], ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "kws_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 49, 10])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="mcudeploy tools/make_example_model.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_bytes(build().SerializeToString())
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
