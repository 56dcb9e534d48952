"""Resize (ONNX Resize / Upsample, TFLite RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR)."""
from __future__ import annotations

import math

from ..registry import Attr, TensorType, op

COORDINATE_MODES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                    "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_macc(node) -> int:
    """Nearest: 0 (a gather). Linear: 2^(resized axes) per output element."""
    if node.attrs["mode"] == "nearest":
        return 0
    resized = sum(1 for a, b in zip(node.inputs[0].shape, node.attrs["sizes"]) if a != b)
    return math.prod(node.outputs[0].shape) * (2 ** resized)


@op("Resize", "resize", inputs=("X",), macc=_resize_macc,
    attrs={"sizes": Attr("ints"), "mode": Attr("str", "nearest", ("nearest", "linear")),
           "coordinate_transformation_mode": Attr("str", "half_pixel", COORDINATE_MODES),
           "nearest_mode": Attr("str", "round_prefer_floor", NEAREST_MODES)})
def resize(inputs, attrs):
    """Resample X to the full output shape ``sizes`` (importers turn scales into sizes).

    For each resized axis the output coordinate ``o`` maps to input coordinate ``x`` by
    ``coordinate_transformation_mode`` (ONNX formulas; TFLite ``half_pixel_centers`` is
    ``half_pixel`` for bilinear and ``tf_half_pixel_for_nn`` for nearest, ``align_corners``
    is ``align_corners``, neither is ``asymmetric``). Nearest rounds ``x`` by
    ``nearest_mode``; linear interpolates between the two neighbours, clamped to the edge.
    """
    x = inputs[0]
    sizes = attrs["sizes"]
    if len(sizes) != x.rank or any(s <= 0 for s in sizes):
        raise ValueError(f"sizes {list(sizes)} must give {x.rank} positive dimensions")
    return [TensorType(x.dtype, tuple(sizes))]
