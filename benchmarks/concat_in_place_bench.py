"""Channel Concat in place (plan/reuse.py ``channel-slice``): the planned arena of models with
NHWC channel concats, with and without it.

    python benchmarks/concat_in_place_bench.py [--cache DIR]   -> results/concat_in_place.md

Models (float ONNX built here, quantized by mcudeploy with one random sample - the figures
are byte sizes, which do not depend on the ranges): a SqueezeNet 1.1-style network at 96x96
(conv 3x3 stride 2 with 64 channels, max pool, 8 fire modules: squeeze 1x1 -> expand 1x1 ||
expand 3x3 -> channel concat, 2 more max pools, conv 1x1 to 10 classes, global average pool), and the U-Nets of
tools/make_unet.py at 256x256 (every skip; the skip also feeds the encoder's max pool) and
with ``halve_skip`` (a 1x1 conv halves each skip before its concat: the Concat is then the
skip's only reader); and SqueezeNet 1.1 at 128 and 224 as TensorFlow exports it
(tools/make_zoo_models.py: Keras, TFLite converter, full int8). Plan: memory-aware order,
views, overlap reuse, alignment 16, graph input and output outside the arena (``io_in_arena
= false``), reference kernels. A copying Concat may be placed over its dead input: the
"memcpy rule" column plans it with the distance a memcpy copy needed, ``max((B-1)(O-L) +
prefix + L, B(O-L))``, the "copying" column with the memmove one the kernel now has,
``(B-1)(O-L) + prefix`` (kernels/overlap.py).
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

from paths import REPO, RESULTS

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

from make_unet import _Builder, make_unet  # noqa: E402
from mcudeploy.driver import deployable_graph  # noqa: E402
from mcudeploy.importers import load_model  # noqa: E402
from mcudeploy.kernels import overlap  # noqa: E402
from mcudeploy.plan.memory_plan import plan_memory  # noqa: E402
from tiling_models import quantize_int8_io  # noqa: E402

FIRES = ((16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192), (64, 256), (64, 256))


def squeezenet(size: int = 96, stem: bool = True):
    """The SqueezeNet-style model (module docstring); ``stem=False``: from the first fire
    module on (input 64 channels at size / 4), where the concats are."""
    from onnx import TensorProto, helper
    build = _Builder(1)
    if not stem:
        return _fires(build, "input", helper, TensorProto, (1, 64, size // 4, size // 4))
    w, b = build.constant("w", build.rng.standard_normal((64, 3, 3, 3)) * 0.2), build.constant("b", np.zeros(64))
    stem = build.node("Relu", [build.node("Conv", ["input", w, b], kernel_shape=[3, 3], pads=[1] * 4,
                                          strides=[2, 2])])
    return _fires(build, build.node("MaxPool", [stem], kernel_shape=[2, 2], strides=[2, 2]), helper, TensorProto,
                  (1, 3, size, size))


def _fires(build, x: str, helper, TensorProto, shape):
    channels = 64
    for fire in FIRES:
        if fire == "pool":
            x = build.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
            continue
        squeeze, expand = fire
        s = build.conv(x, channels, squeeze, 1)
        x = build.node("Concat", [build.conv(s, squeeze, expand, 1), build.conv(s, squeeze, expand, 3)], axis=1)
        channels = 2 * expand
    output = build.node("GlobalAveragePool", [build.conv(x, channels, 10, 1)])
    graph = helper.make_graph(build.nodes, "squeezenet",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], build.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), shape


def graph_of(model, shape):
    import onnx
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.onnx"
        onnx.save(model, path)
        graph = load_model(path)
    return deployable_graph(quantize_int8_io(graph, shape, samples=1))


def memcpy_rule(node, value) -> int | str:
    """The Concat overlap distance when its copies were memcpy (a copy may not overlap its own
    source): max((B - 1)(O - L) + prefix + L, B (O - L)), for the "before" column."""
    distance = memmove_rule(node, value)
    if isinstance(distance, str):
        return distance
    output = node.outputs[0]
    axis = node.attrs["axis"] % output.rank
    blocks = math.prod(output.shape[:axis])
    inner = math.prod(output.shape[axis + 1:]) * output.dtype.itemsize
    length, block = value.shape[axis] * inner, output.shape[axis] * inner
    return max(distance + length, blocks * (block - length))


memmove_rule = overlap.PROOFS["Concat"]


def plan_with_memcpy_rule(graph):
    overlap.PROOFS["Concat"] = memcpy_rule
    try:
        return plan_memory(graph, io_in_arena=False, concat_in_place=False)
    finally:
        overlap.PROOFS["Concat"] = memmove_rule


def tflite_graphs(cache: Path) -> dict:
    from make_zoo_models import build
    cache.mkdir(parents=True, exist_ok=True)
    graphs = {}
    for size in (128, 224):
        path = cache / f"squeezenet11_{size}_int8.tflite"
        graphs[f"SqueezeNet 1.1 {size}, TFLite export"] = deployable_graph(
            load_model(path if path.exists() else build("squeezenet11", size, cache)))
    return graphs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/mcudeploy_zoo_models"),
                        help="folder of the TFLite SqueezeNets (built there when missing)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    models = {"squeezenet-style 96": squeezenet(), "its fire modules (24x24x64 input)": squeezenet(stem=False),
              "unet256": (make_unet(256), (1, 1, 256, 256)),
              "unet256 halve_skip": (make_unet(256, halve_skip=True), (1, 1, 256, 256))}
    graphs = {name: graph_of(model, shape) for name, (model, shape) in models.items()}
    graphs.update(tflite_graphs(args.cache))
    lines = ["# Channel Concat in place (NHWC channel slices)", "",
             "Made by `python benchmarks/concat_in_place_bench.py`. " + " ".join(__doc__.split("\n\n")[2].split()), "",
             "| model | channel concats | in place | arena copying, memcpy rule (bytes) | arena copying (bytes) "
             "| arena in place (bytes) | saved | peak |",
             "|---|---|---|---|---|---|---|---|"]
    refusals = []
    for name, graph in graphs.items():
        concats = [n.name for n in graph.nodes if n.op == "Concat"]
        before = plan_with_memcpy_rule(graph)
        dense = plan_memory(graph, io_in_arena=False, concat_in_place=False)
        strided = plan_memory(graph, io_in_arena=False)
        in_place = sum(name in strided.elided_nodes for name in concats)
        saved = 1 - strided.arena_bytes / dense.arena_bytes
        step, alive = strided.peak_step()
        lines.append(f"| {name} | {len(concats)} | {in_place} | {before.arena_bytes} | {dense.arena_bytes} | "
                     f"{strided.arena_bytes} | {saved:.1%} | "
                     f"at {strided.order[step]}: {', '.join(f'{p.name} {p.size}' for p in alive[:3])} |")
        refusals += [f"- {name}, {node}: {reason}" for node, reason in strided.reuse_refusals if node in concats]
    lines += ["", "Concats left as copies, and why:", ""] + (refusals or ["- none"])
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "concat_in_place.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
