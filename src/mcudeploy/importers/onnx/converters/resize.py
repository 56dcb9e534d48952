"""Resize and Upsample -> IR ``Resize`` with a static output shape ``sizes``.

``sizes`` comes from the ``sizes`` input, or from ``scales`` as ``floor(in * scale)``
(the ONNX rule). The IR keeps only the output size, so a scale whose product with the
input size is not (nearly) a whole number is refused: its coordinate mapping would differ
from ``out / in``. Refused with a reason: ``cubic`` mode, ``antialias``, ``roi``
(``tf_crop_and_resize``), ``keep_aspect_ratio_policy`` other than ``stretch``.
Upsample and Resize-10 are ``Resize`` with ``asymmetric`` coordinates and ``floor`` rounding
(the version converter's Resize gets those attributes back in ``parse``; a deprecated
Upsample left in an opset >= 10 model is converted here).

Equivalent nearest modes (:func:`equivalent_nearest_mode`): a nearest Resize selects, along
each axis, input index ``clamp(round_mode(x(o)), 0, in - 1)`` for output index ``o``, with
``x(o)`` the ONNX coordinate transformation. Different attributes can select exactly the
same pixels at a given size: at an integer up-scaling ``s``, ``half_pixel`` (ONNX's
default) gives ``x = k + (j + 0.5) / s - 0.5`` for ``o = s k + j``, strictly within
``(k - 0.5, k + 0.5)``, so both round modes select ``k``, which is ``floor(o / s)``:
``asymmetric`` + ``floor``. The importer computes both index maps for the actual sizes (in
float32 and float64 arithmetic, so that no rounding edge decides) and, when they are equal
on every axis, writes the first equal form TFLite's RESIZE_NEAREST_NEIGHBOR has
(:data:`TFLITE_NEAREST_FORMS`), which the integer kernels run. Other attributes are kept.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import onnx

from ....ir.opdefs.resize import COORDINATE_MODES
from ..context import ConversionContext
from .registry import converter
from .spatial import NCHW

MAX_SCALE = 1e4   # a larger up-scaling is a damaged file, not a model for a microcontroller
# (coordinate_transformation_mode, nearest_mode) of TFLite's nearest forms, preferred first:
# no flags, half_pixel_centers, align_corners (rounds half away from zero: prefer ceil here)
TFLITE_NEAREST_FORMS = (("asymmetric", "floor"), ("tf_half_pixel_for_nn", "floor"),
                        ("align_corners", "round_prefer_ceil"))
_ROUND: dict[str, Callable[[np.ndarray], np.ndarray]] = {"round_prefer_floor": lambda x: np.ceil(x - 0.5), "round_prefer_ceil": lambda x: np.floor(x + 0.5),
          "floor": np.floor, "ceil": np.ceil}


def _present(array: np.ndarray | None) -> np.ndarray | None:
    return None if array is None or array.size == 0 else array.reshape(-1)


def _sizes_from_scales(ctx: ConversionContext, node: onnx.NodeProto, shape, scales) -> list[int]:
    sizes = []
    for size, scale in zip(shape, scales):
        if not (math.isfinite(float(scale)) and 0 < float(scale) <= MAX_SCALE):
            raise ctx.unsupported(node, f"scale {float(scale)} must be a positive number up to "
                                  f"{MAX_SCALE:g}")
        exact = size * float(scale)
        if abs(exact - round(exact)) > 1e-4 * max(1.0, exact):
            raise ctx.unsupported(node, f"scale {float(scale)} on a dimension of {size} gives "
                                  f"{exact:.4g} output elements; only scales giving a whole "
                                  "output size are supported (give `sizes` instead)")
        sizes.append(int(math.floor(exact + 1e-4)))
    return sizes


def nearest_indices(in_size: int, out_size: int, coordinate: str, rounding: str,
                    dtype=np.float64) -> np.ndarray:
    """The input index a nearest Resize selects for every output index along one axis (ONNX
    formulas, computed in ``dtype``)."""
    o = np.arange(out_size, dtype=dtype)
    scale = dtype(out_size) / dtype(in_size)
    half = dtype(0.5)
    if coordinate in ("half_pixel", "pytorch_half_pixel"):
        x = (o + half) / scale - half if out_size > 1 or coordinate == "half_pixel" else np.zeros(1, dtype)
    elif coordinate == "asymmetric":
        x = o / scale
    elif coordinate == "tf_half_pixel_for_nn":
        x = (o + half) / scale
    else:   # align_corners
        x = o * dtype(in_size - 1) / dtype(out_size - 1) if out_size > 1 else np.zeros(1, dtype)
    return np.clip(_ROUND[rounding](x).astype(np.int64), 0, in_size - 1)


def equivalent_nearest_mode(in_shape, out_shape, coordinate: str, rounding: str) -> tuple[str, str]:
    """The first of :data:`TFLITE_NEAREST_FORMS` that selects the same input pixels as
    ``(coordinate, rounding)`` on every resized axis (module docstring), else the pair as given."""
    axes = [(a, b) for a, b in zip(in_shape, out_shape) if a != b]
    for form in TFLITE_NEAREST_FORMS:
        if all(np.array_equal(nearest_indices(a, b, coordinate, rounding, dtype),
                              nearest_indices(a, b, *form, dtype))
               for a, b in axes for dtype in (np.float32, np.float64)):
            return form
    return coordinate, rounding


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
    x = ctx.required_input(node, 0)
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
    mode = attrs.get("mode", "nearest")
    coordinate = attrs.get("coordinate_transformation_mode", "half_pixel")
    rounding = attrs.get("nearest_mode", "round_prefer_floor")
    if mode == "nearest":
        coordinate, rounding = equivalent_nearest_mode(x.shape, full, coordinate, rounding)
    _emit_resize(ctx, node, full, {"mode": mode, "coordinate_transformation_mode": coordinate,
                                   "nearest_mode": rounding})


@converter("Upsample")
def convert_upsample(ctx: ConversionContext, node: onnx.NodeProto) -> None:
    attrs = ctx.attributes(node)
    mode = attrs.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise ctx.unsupported(node, f"mode {mode!r} is not supported (nearest, linear)")
    x = ctx.required_input(node, 0)
    scales = attrs.get("scales")
    if scales is None:
        scales = ctx.required_constant_input(node, 1, "scales").reshape(-1)
    sizes = _sizes_from_scales(ctx, node, x.shape, scales)
    _emit_resize(ctx, node, sizes, {"mode": "nearest" if mode == "nearest" else "linear",
                                    "coordinate_transformation_mode": "asymmetric",
                                    "nearest_mode": "floor"})
