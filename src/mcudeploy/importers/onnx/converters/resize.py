"""Resize and Upsample -> IR ``Resize`` with a static output shape ``sizes``.

``sizes`` comes from the ``sizes`` input, or from ``scales`` as ``floor(in * scale)``
(the ONNX rule). The IR keeps only the output size, so a scale whose product with the
input size is not (nearly) a whole number is refused: its coordinate mapping would differ
from ``out / in``. Refused with a reason: ``cubic`` mode, ``antialias``, ``roi``
(``tf_crop_and_resize``), ``keep_aspect_ratio_policy`` other than ``stretch``.
Upsample and Resize-10 are ``Resize`` with ``asymmetric`` coordinates and ``floor`` rounding
(the version converter's Resize gets those attributes back in ``parse``; a deprecated
Upsample left in an opset >= 10 model is converted here).
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from ....ir.opdefs.resize import COORDINATE_MODES
from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW


def _present(array: np.ndarray | None) -> np.ndarray | None:
    return None if array is None or array.size == 0 else array.reshape(-1)


def _sizes_from_scales(ctx: ConversionContext, node: onnx.NodeProto, shape, scales) -> list[int]:
    sizes = []
    for size, scale in zip(shape, scales):
        exact = size * float(scale)
        if abs(exact - round(exact)) > 1e-4 * max(1.0, exact):
            raise ctx.unsupported(node, f"scale {float(scale)} on a dimension of {size} gives "
                                  f"{exact:.4g} output elements; only scales giving a whole "
                                  "output size are supported (give `sizes` instead)")
        sizes.append(int(math.floor(exact + 1e-4)))
    return sizes


def _emit_resize(ctx: ConversionContext, node: onnx.NodeProto, sizes, attrs: dict) -> None:
    resized = ctx.emit("Resize", [ctx.input(node, 0)], {"sizes": sizes, **attrs}, node,
                       outputs=[node.output[0]])
    if resized.outputs[0].rank == 4:
        resized.outputs[0].layout = NCHW


def _check_resize_attributes(ctx: ConversionContext, node: onnx.NodeProto, attrs: dict) -> None:
    if attrs.get("mode", "nearest") not in ("nearest", "linear"):
        raise ctx.unsupported(node, f"mode {attrs['mode']!r} is not supported (nearest, "
                              "linear); export with bilinear or nearest interpolation")
    if attrs.get("antialias", 0):
        raise ctx.unsupported(node, "antialias=1 is not supported")
    coordinate = attrs.get("coordinate_transformation_mode", "half_pixel")
    if coordinate == "tf_crop_and_resize":
        raise ctx.unsupported(node, "coordinate_transformation_mode tf_crop_and_resize (a "
                              "region of interest, roi) is not supported")
    if coordinate not in COORDINATE_MODES:
        raise ctx.unsupported(node, f"coordinate_transformation_mode {coordinate!r} is not "
                              f"supported ({', '.join(COORDINATE_MODES)})")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise ctx.unsupported(node, "keep_aspect_ratio_policy "
                              f"{attrs['keep_aspect_ratio_policy']!r} is not supported; give "
                              "the exact output sizes")


@converter("Resize")
def convert_resize(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    _check_resize_attributes(ctx, node, attrs)
    x = ctx.input(node, 0)
    scales = _present(ctx.constant_input(node, 2, "scales"))
    sizes = _present(ctx.constant_input(node, 3, "sizes"))
    axes = [a % x.rank for a in attrs.get("axes", range(x.rank))]
    given = sizes if sizes is not None else scales
    if given is None or len(given) != len(axes):
        raise ctx.invalid(node, f"needs {len(axes)} scales or sizes for {x.type_str()}")
    picked = [x.shape[a] for a in axes]
    new = [int(s) for s in sizes] if sizes is not None else \
        _sizes_from_scales(ctx, node, picked, scales)
    full = list(x.shape)
    for axis, size in zip(axes, new):
        full[axis] = size
    _emit_resize(ctx, node, full, {
        "mode": attrs.get("mode", "nearest"),
        "coordinate_transformation_mode": attrs.get("coordinate_transformation_mode", "half_pixel"),
        "nearest_mode": attrs.get("nearest_mode", "round_prefer_floor")})


@converter("Upsample")
def convert_upsample(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise ctx.unsupported(node, f"mode {mode!r} is not supported (nearest, linear)")
    x = ctx.input(node, 0)
    scales = attrs.get("scales")
    if scales is None:
        scales = ctx.constant_input(node, 1, "scales").reshape(-1)
    sizes = _sizes_from_scales(ctx, node, x.shape, scales)
    _emit_resize(ctx, node, sizes, {"mode": "nearest" if mode == "nearest" else "linear",
                                    "coordinate_transformation_mode": "asymmetric",
                                    "nearest_mode": "floor"})
