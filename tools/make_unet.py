"""Generate U-Net ONNX models (float32, NCHW, opset 13, seeded weights) for memory-planning studies.

    python tools/make_unet.py OUT_DIR [--sizes 512 384] [--all]
    make_unet(size=512, upsample="nearest", skip_from=32, halve_skip=False, seed=0) -> onnx.ModelProto

Architecture: 1-channel input H x H; encoder levels of 32, 64, 128, 256 channels (two 3x3
conv + ReLU each, 2x2 max pool between levels); decoder: upsample x2, concat with the
encoder's skip tensor, two 3x3 conv + ReLU; a 1x1 conv to 1 output channel. Knobs:

* ``upsample``: ``nearest`` / ``bilinear`` (Resize, channels kept, then the convs reduce)
  or ``convtranspose`` (2x2 stride-2 ConvTranspose halving the channels);
* ``skip_from``: the narrowest encoder level that sends a skip concat - 32 (every level,
  including the full-resolution 32-channel one) or 64 (from the 64-channel level down: the
  full-resolution level has no skip, its decoder level just upsamples);
* ``halve_skip``: a 1x1 conv halving the skip tensor's channels before the concat (the
  memory-aware scheduler can run it right after the encoder level, so the long-lived skip
  tensor is half as large).
Weights are seeded random (He-scaled); the models are for planning, not for accuracy.
"""
from __future__ import annotations

import argparse
import itertools
import logging
from pathlib import Path

import numpy as np

WIDTHS = (32, 64, 128, 256)
UPSAMPLES = ("nearest", "bilinear", "convtranspose")


class _Builder:
    def __init__(self, seed: int) -> None:
        from onnx import helper
        self.helper, self.nodes, self.initializers = helper, [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def constant(self, base: str, array: np.ndarray) -> str:
        from onnx import numpy_helper
        name = self.name(base)
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs) -> str:
        output = self.name(op.lower())
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def conv(self, x: str, in_channels: int, out_channels: int, kernel: int, relu: bool = True) -> str:
        scale = np.sqrt(2.0 / (in_channels * kernel * kernel))
        w = self.constant("w", self.rng.standard_normal((out_channels, in_channels, kernel, kernel)) * scale)
        b = self.constant("b", np.zeros(out_channels))
        pad = kernel // 2
        y = self.node("Conv", [x, w, b], kernel_shape=[kernel, kernel], pads=[pad] * 4)
        return self.node("Relu", [y]) if relu else y

    def upsample(self, x: str, channels: int, mode: str) -> tuple[str, int]:
        if mode == "convtranspose":
            scale = np.sqrt(2.0 / (channels * 4))
            w = self.constant("wt", self.rng.standard_normal((channels, channels // 2, 2, 2)) * scale)
            return self.node("ConvTranspose", [x, w], kernel_shape=[2, 2], strides=[2, 2]), channels // 2
        scales = self.constant("scales", np.array([1, 1, 2, 2]))
        attrs = {"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"} \
            if mode == "nearest" else {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
        return self.node("Resize", [x, "", scales], **attrs), channels


def make_unet(size: int = 512, upsample: str = "nearest", skip_from: int = 32, halve_skip: bool = False,
              seed: int = 0):
    """The U-Net described in the module docstring, as an ``onnx.ModelProto``."""
    from onnx import TensorProto, checker, helper
    if upsample not in UPSAMPLES or skip_from not in WIDTHS[:2] or size % 8:
        raise ValueError(f"bad U-Net options: upsample={upsample!r} skip_from={skip_from} size={size}")
    build = _Builder(seed)
    x, channels, skips = "input", 1, []
    for level, width in enumerate(WIDTHS):
        x = build.conv(build.conv(x, channels, width, 3), width, width, 3)
        channels = width
        if level < len(WIDTHS) - 1:
            skips.append((x, width))
            x = build.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    for skip, width in reversed(skips):
        x, channels = build.upsample(x, channels, upsample)
        if width >= skip_from:
            if halve_skip:
                skip, width_kept = build.conv(skip, width, width // 2, 1), width // 2
            else:
                width_kept = width
            x, channels = build.node("Concat", [x, skip], axis=1), channels + width_kept
        x = build.conv(build.conv(x, channels, width, 3), width, width, 3)
        channels = width
    output = build.conv(x, channels, 1, 1, relu=False)
    graph = helper.make_graph(build.nodes, f"unet{size}_{upsample}_skip{skip_from}{'_halved' if halve_skip else ''}",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, size, size])],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 1, size, size])],
                              build.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_unet")
    checker.check_model(model)
    return model


def variants(sizes=(512, 384)):
    """Every (size, upsample, skip_from, halve_skip) combination."""
    return list(itertools.product(sizes, UPSAMPLES, (64, 32), (False, True)))


def main() -> None:
    import onnx
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 384])
    arguments = parser.parse_args()
    arguments.output.mkdir(parents=True, exist_ok=True)
    for size, upsample, skip_from, halve in variants(tuple(arguments.sizes)):
        model = make_unet(size, upsample, skip_from, halve)
        path = arguments.output / f"{model.graph.name}.onnx"
        onnx.save(model, path)
        logging.info("wrote %s", path)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
