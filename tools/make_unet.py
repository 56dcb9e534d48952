"""Generate U-Net ONNX models (float32, NCHW, opset 13, seeded weights) for memory-planning studies.

    python tools/make_unet.py OUT_DIR [--sizes 512 384] [--all]
    python tools/make_unet.py OUT_DIR --sizes 512 --odd-skip 8      # one model, 72 / 136-channel concats
    python tools/make_unet.py OUT_DIR --sizes 256 --segmentation    # one model: sigmoid head, ONNX-default Resize
    make_unet(size=512, upsample="nearest", skip_from=32, halve_skip=False, seed=0, odd_skip=0,
              head="linear", resize_attributes="asymmetric") -> onnx.ModelProto

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
  tensor is half as large);
* ``odd_skip``: a 1x1 conv reducing every skip tensor to ``odd_skip`` channels before the
  concat, for NPU channel-alignment studies: with 8 and nearest up-sampling the decoder's
  concats have 64 + 8 = 72 (full resolution), 128 + 8 = 136 and 256 + 8 = 264 channels,
  none a multiple of 16;
* ``head``: ``linear`` (the 1x1 conv's output as it is) or ``sigmoid`` (a Sigmoid after it:
  a binary segmentation mask, as segmentation U-Nets end);
* ``resize_attributes``: ``asymmetric`` (nearest Resize with ``asymmetric`` coordinates and
  ``floor`` rounding, what PyTorch exports) or ``default`` (no coordinate / rounding
  attributes: ONNX's defaults ``half_pixel`` and ``round_prefer_floor``, what a hand-written
  or Keras-converted Resize carries); at the x2 scale both select the same pixels.
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
HEADS = ("linear", "sigmoid")
RESIZE_ATTRIBUTES = ("asymmetric", "default")


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

    def upsample(self, x: str, channels: int, mode: str, resize_attributes: str = "asymmetric"
                 ) -> tuple[str, int]:
        if mode == "convtranspose":
            scale = np.sqrt(2.0 / (channels * 4))
            w = self.constant("wt", self.rng.standard_normal((channels, channels // 2, 2, 2)) * scale)
            return self.node("ConvTranspose", [x, w], kernel_shape=[2, 2], strides=[2, 2]), channels // 2
        scales = self.constant("scales", np.array([1, 1, 2, 2]))
        if mode == "nearest":
            attrs = {"mode": "nearest"} if resize_attributes == "default" else \
                {"mode": "nearest", "nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"}
        else:
            attrs = {"mode": "linear", "coordinate_transformation_mode": "half_pixel"}
        return self.node("Resize", [x, "", scales], **attrs), channels


def make_unet(size: int = 512, upsample: str = "nearest", skip_from: int = 32, halve_skip: bool = False,
              seed: int = 0, odd_skip: int = 0, head: str = "linear", resize_attributes: str = "asymmetric"):
    """The U-Net described in the module docstring, as an ``onnx.ModelProto``."""
    from onnx import TensorProto, checker, helper
    if upsample not in UPSAMPLES or skip_from not in WIDTHS[:2] or size % 8 or odd_skip < 0 or \
            (odd_skip and halve_skip) or head not in HEADS or resize_attributes not in RESIZE_ATTRIBUTES:
        raise ValueError(f"bad U-Net options: upsample={upsample!r} skip_from={skip_from} size={size} "
                         f"odd_skip={odd_skip} halve_skip={halve_skip} head={head!r} "
                         f"resize_attributes={resize_attributes!r}")
    build = _Builder(seed)
    x, channels, skips = "input", 1, []
    for level, width in enumerate(WIDTHS):
        x = build.conv(build.conv(x, channels, width, 3), width, width, 3)
        channels = width
        if level < len(WIDTHS) - 1:
            skips.append((x, width))
            x = build.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    for skip, width in reversed(skips):
        x, channels = build.upsample(x, channels, upsample, resize_attributes)
        if width >= skip_from:
            if halve_skip:
                skip, width_kept = build.conv(skip, width, width // 2, 1), width // 2
            elif odd_skip:
                skip, width_kept = build.conv(skip, width, odd_skip, 1), odd_skip
            else:
                width_kept = width
            x, channels = build.node("Concat", [x, skip], axis=1), channels + width_kept
        x = build.conv(build.conv(x, channels, width, 3), width, width, 3)
        channels = width
    output = build.conv(x, channels, 1, 1, relu=False)
    if head == "sigmoid":
        output = build.node("Sigmoid", [output])
    suffix = "_halved" if halve_skip else (f"_odd{odd_skip}" if odd_skip else "")
    suffix += ("_sigmoid" if head == "sigmoid" else "") + ("_default_resize" if resize_attributes == "default" else "")
    graph = helper.make_graph(build.nodes, f"unet{size}_{upsample}_skip{skip_from}{suffix}",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, size, size])],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 1, size, size])],
                              build.initializers)
    # IR version 8 (opset 13 needs 7): onnxruntime 1.23 loads IR versions up to 11, onnx 1.19 writes 12
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_unet",
                              ir_version=8)
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
    parser.add_argument("--odd-skip", type=int, default=0, metavar="N",
                        help="one model per size (nearest, every skip) with each skip reduced to N channels")
    parser.add_argument("--segmentation", action="store_true",
                        help="one model per size (nearest, every skip): sigmoid head, Resize with "
                             "ONNX's default attributes (half_pixel, round_prefer_floor)")
    arguments = parser.parse_args()
    arguments.output.mkdir(parents=True, exist_ok=True)
    if arguments.segmentation:
        for size in arguments.sizes:
            model = make_unet(size, head="sigmoid", resize_attributes="default")
            onnx.save(model, arguments.output / f"{model.graph.name}.onnx")
        return
    if arguments.odd_skip:
        for size in arguments.sizes:
            model = make_unet(size, odd_skip=arguments.odd_skip)
            onnx.save(model, arguments.output / f"{model.graph.name}.onnx")
        return
    for size, upsample, skip_from, halve in variants(tuple(arguments.sizes)):
        model = make_unet(size, upsample, skip_from, halve)
        path = arguments.output / f"{model.graph.name}.onnx"
        onnx.save(model, path)
        logging.info("wrote %s", path)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main()
